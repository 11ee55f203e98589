package main

import (
	"errors"
	"fmt"
	"log"

	corev1 "k8s.io/api/core/v1"
)

// reconciler brings this node's CNI config and routes in line with the Node objects. It is
// called on every informer event and resync, so a pass that changes nothing must run no
// command and log nothing.
type reconciler struct {
	self         string
	conflistPath string
	mtu          int
	ip           ipRunner
	logger       *log.Logger
	// installed holds the routes this process put in place (pod CIDR -> gateway), so only
	// those are ever removed. After a restart it is empty and every route is replaced once,
	// which `ip route replace` makes harmless.
	installed map[string]string
	// noted are the messages about skipped nodes already logged, so resyncs do not repeat them.
	noted map[string]bool
}

func newReconciler(self, conflistPath string, mtu int, ip ipRunner, logger *log.Logger) *reconciler {
	return &reconciler{
		self:         self,
		conflistPath: conflistPath,
		mtu:          mtu,
		ip:           ip,
		logger:       logger,
		installed:    map[string]string{},
		noted:        map[string]bool{},
	}
}

func (r *reconciler) reconcile(nodes []corev1.Node) error {
	return errors.Join(r.ensureConflist(nodes), r.ensureRoutes(nodes))
}

func (r *reconciler) ensureConflist(nodes []corev1.Node) error {
	self := findNode(nodes, r.self)
	if self == nil {
		r.noteOnce(fmt.Sprintf("node %s: not in the API yet; no CNI config until it is", r.self))
		return nil
	}
	podCIDR, err := podCIDRv4(self)
	if errors.Is(err, errNotAssigned) {
		return nil // the node IPAM controller has not got to it; its update will wake us
	}
	if err != nil {
		r.noteOnce(fmt.Sprintf("node %s (this node): no CNI config: %v", r.self, err))
		return nil
	}
	content, err := conflist(podCIDR, r.mtu)
	if err != nil {
		return err
	}
	written, err := writeFileIfChanged(r.conflistPath, content)
	if err != nil {
		return fmt.Errorf("writing the CNI config: %w", err)
	}
	if written {
		r.logger.Printf("wrote %s for pod CIDR %s", r.conflistPath, podCIDR)
	}
	return nil
}

func (r *reconciler) ensureRoutes(nodes []corev1.Node) error {
	desired, notes := planRoutes(nodes, r.self)
	for _, n := range notes {
		r.noteOnce(n)
	}
	changes := diffRoutes(r.installed, desired)
	errs := make([]error, 0, len(changes.Delete)+len(changes.Replace))
	for _, cidr := range changes.Delete {
		errs = append(errs, r.deleteRoute(cidr))
	}
	for _, rt := range changes.Replace {
		errs = append(errs, r.replaceRoute(rt))
	}
	return errors.Join(errs...)
}

// deleteRoute forgets a route once it is gone, whoever removed it; on any other failure it
// stays installed so the next pass tries again.
func (r *reconciler) deleteRoute(cidr string) error {
	gateway := r.installed[cidr]
	if err := r.ip.Run("route", "del", cidr); err != nil && !routeAlreadyGone(err) {
		return err
	}
	delete(r.installed, cidr)
	r.logger.Printf("removed route %s via %s", cidr, gateway)
	return nil
}

func (r *reconciler) replaceRoute(rt route) error {
	if err := r.ip.Run("route", "replace", rt.CIDR, "via", rt.Gateway); err != nil {
		return err
	}
	if old, ok := r.installed[rt.CIDR]; ok {
		r.logger.Printf("changed route %s via %s (was via %s)", rt.CIDR, rt.Gateway, old)
	} else {
		r.logger.Printf("added route %s via %s", rt.CIDR, rt.Gateway)
	}
	r.installed[rt.CIDR] = rt.Gateway
	return nil
}

func (r *reconciler) noteOnce(msg string) {
	if r.noted[msg] {
		return
	}
	r.noted[msg] = true
	r.logger.Print(msg)
}

func findNode(nodes []corev1.Node, name string) *corev1.Node {
	for i := range nodes {
		if nodes[i].Name == name {
			return &nodes[i]
		}
	}
	return nil
}

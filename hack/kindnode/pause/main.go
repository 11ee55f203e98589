// Command pause is the sandbox ("pause") container of the air-gapped kind node image: it
// holds a pod's namespaces open until the runtime stops it, and reaps the zombies a pod that
// shares its PID namespace leaves behind, as registry.k8s.io/pause does (that image cannot be
// pulled without a registry).
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for sig := range signals {
		if sig != syscall.SIGCHLD {
			os.Exit(0)
		}
		reapChildren()
	}
}

// reapChildren collects every exited child: one SIGCHLD may stand for several.
func reapChildren() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}

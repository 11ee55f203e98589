package results

import (
	"fmt"
	"strings"
)

// provenanceTable says what produced each arm's numbers: the CouchDB (version, git sha,
// nodes, what ran its views, Erlang, collation), and for operator runs the images each pod
// really ran (digests), their nodes and the versions of Kubernetes, the chart and the
// operator.
func provenanceTable(docs []*Document) Table {
	t := Table{
		Title:  "Provenance",
		Header: []string{"Option", "CouchDB", "Views run on", "Erlang", "Collation", "Images (digest)", "Nodes", "Kubernetes, chart, operator"},
		Note: "Views run on: what a view in the arm's language reported about its interpreter, and what the arm asked " +
			"for when that differs (spec.runtimeMismatch: a stopped arm has no results). Images: what each pod " +
			"really ran (the kubelet's image ID). Nodes: allocatable CPU and memory, kernel.",
	}
	for _, d := range inSpecOrder(docs) {
		for _, a := range d.Arms {
			srv := d.ServerOf(a)
			server := strings.TrimSpace(fmt.Sprintf("%s %s", srv.Version, shortSHA(srv.GitSHA)))
			if server == "" {
				continue
			}
			server = fmt.Sprintf("%s, %d node(s)", server, len(srv.Nodes))
			views := "-"
			if rt := a.Runtime; rt != nil {
				views = rt.String()
				switch {
				case rt.Stopped:
					views += "; asked for " + rt.Asked + ": stopped"
				case rt.Mismatch != "":
					views += "; asked for " + rt.Asked + ": measured anyway (RuntimeMismatch)"
				}
			}
			images, nodes, versions := "-", "-", "-"
			if c := a.Cluster; c != nil {
				im := make([]string, 0, len(c.Pods))
				for _, p := range c.Pods {
					im = append(im, fmt.Sprintf("%s: %s%s", roleOf(p), p.Image, digestOf(p.ImageID)))
				}
				images = orNA(strings.Join(unique(im), "; "))
				ns := make([]string, 0, len(c.Nodes))
				for _, n := range c.Nodes {
					ns = append(ns, fmt.Sprintf("%s (%s CPU, %s, %s)", n.Name, n.CPU, n.Memory, n.Kernel))
				}
				nodes = orNA(strings.Join(ns, "; "))
				versions = orNA(strings.Join(nonEmpty(c.KubernetesVersion, c.Chart, "couchbench "+c.Operator), ", "))
			}
			t.Rows = append(t.Rows, []string{a.QueryServer, server, views, orNA(srv.ErlangVersion), orNA(srv.CollationDriver),
				images, nodes, versions})
		}
	}
	return t
}

func roleOf(p PodRun) string {
	if p.Step != "" {
		return p.Role + " (" + string(p.Step) + ")"
	}
	return p.Role
}

// digestOf is the short digest of an image ID ("docker.io/library/couchdb@sha256:abc..." or
// "sha256:abc...").
func digestOf(imageID string) string {
	_, digest, ok := strings.Cut(imageID, "sha256:")
	if !ok || len(digest) < 12 {
		return ""
	}
	return " @sha256:" + digest[:12]
}

func shortSHA(sha string) string {
	if sha == "" {
		return ""
	}
	return "(" + sha + ")"
}

func unique(items []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range items {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

func nonEmpty(items ...string) []string {
	var out []string
	for _, s := range items {
		if s != "" && s != "couchbench " {
			out = append(out, s)
		}
	}
	return out
}

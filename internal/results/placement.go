package results

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
)

// sharesNodeMarker is what the placement table says of a load generator on a node of its
// arm's CouchDB.
const sharesNodeMarker = "shares a node with its CouchDB"

// roles are the pod roles in the order the placement table lists them: the CouchDB measured,
// then its load generators.
var roles = []string{RoleCouchDB, RoleRunner, RoleK6}

// placementTable is where every pod of an operator run's arms ran, each load generator on a
// node of its arm's CouchDB marked, with a line per arm adding the nodes up: whether the load
// generators kept off CouchDB's nodes, read from the results alone.
func placementTable(docs []*Document) Table {
	t := Table{
		Title:  "Placement",
		Header: []string{colOption, "Role", "Step", "Pod", "Node", "Isolation"},
		Note: "Load generators: the runner and k6 pods. One on a node of its arm's CouchDB competes with it for CPU, " +
			"memory and network; its step's numbers are flagged SharedNode. The nodes are described under Provenance.",
	}
	for _, d := range inSpecOrder(docs) {
		for _, a := range d.Arms {
			if a.Cluster == nil || len(a.Cluster.Pods) == 0 {
				continue
			}
			couchdb := couchdbNodes(a.Cluster)
			var generators, shared []string
			for _, p := range placed(a.Cluster.Pods) {
				marker := ""
				if p.Role != RoleCouchDB && p.Node != "" && !slices.Contains(generators, p.Node) {
					generators = append(generators, p.Node)
				}
				if sharesNode(p, couchdb) {
					marker = sharesNodeMarker
					if !slices.Contains(shared, p.Node) {
						shared = append(shared, p.Node)
					}
				}
				t.Rows = append(t.Rows, []string{a.QueryServer, p.Role, string(p.Step), p.Pod, orNA(p.Node), marker})
				t.Marked = append(t.Marked, marker != "")
			}
			slices.Sort(generators)
			line := a.QueryServer + ": CouchDB's pods not recorded (an existing CouchDB); load generators on " + onNodes(generators)
			if len(couchdb) > 0 {
				line = fmt.Sprintf("%s: CouchDB on %s; load generators on %s, %d of them shared with CouchDB",
					a.QueryServer, onNodes(couchdb), onNodes(generators), len(shared))
			}
			t.Lines = append(t.Lines, line)
		}
	}
	return t
}

// placed is the pods in the placement table's order, each once: the operator records a pod
// per container.
func placed(pods []PodRun) []PodRun {
	out := slices.Clone(pods)
	slices.SortFunc(out, func(a, b PodRun) int {
		return cmp.Or(cmp.Compare(slices.Index(roles, a.Role), slices.Index(roles, b.Role)),
			cmp.Compare(slices.Index(benchv1.Steps, a.Step), slices.Index(benchv1.Steps, b.Step)), strings.Compare(a.Pod, b.Pod))
	})
	return slices.CompactFunc(out, func(a, b PodRun) bool { return a.Pod == b.Pod })
}

// onNodes counts and names nodes: "2 node(s) (w1, w4)".
func onNodes(nodes []string) string {
	if len(nodes) == 0 {
		return "0 node(s)"
	}
	return fmt.Sprintf("%d node(s) (%s)", len(nodes), strings.Join(nodes, ", "))
}

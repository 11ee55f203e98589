package results

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
)

// placementDocument is an operator run of two arms. spidermonkey's CouchDB runs on w1, w2
// and w3, its runners on w4 and w1 and its k6 pods on w4 and w2: the runner on w1 and the k6
// pod on w2 share a node with it. quickjs's CouchDB runs on w4 alone, so its k6 pod on w4
// shares a node and its runner on w1, beside the other arm's CouchDB only, does not. The
// pods are listed in no particular order, a CouchDB pod once per container.
func placementDocument() *Document {
	d := sampleDocument(2)
	d.Server = Provenance{Vendor: "The Apache Software Foundation", Version: "3.4.3", Nodes: []string{"couchdb@a", "couchdb@b", "couchdb@c"}}
	d.Arms[0].QueryServer, d.Arms[1].QueryServer = "spidermonkey", "quickjs"
	d.Arms[0].Cluster = &Cluster{Pods: []PodRun{
		{Role: RoleK6, Step: benchv1.StepReads, Pod: "sm-reads-1", Node: "w2", Image: "grafana/k6"},
		{Role: RoleRunner, Step: benchv1.StepIndex, Pod: "sm-index", Node: "w1", Image: "couchbench"},
		{Role: RoleCouchDB, Pod: "sm-couchdb-2", Node: "w3", Image: "couchdb"},
		{Role: RoleRunner, Step: benchv1.StepSeed, Pod: "sm-seed", Node: "w4", Image: "couchbench"},
		{Role: RoleCouchDB, Pod: "sm-couchdb-0", Node: "w1", Image: "couchdb"},
		{Role: RoleCouchDB, Pod: "sm-couchdb-0", Node: "w1", Image: "exporter"},
		{Role: RoleK6, Step: benchv1.StepReads, Pod: "sm-reads-0", Node: "w4", Image: "grafana/k6"},
		{Role: RoleCouchDB, Pod: "sm-couchdb-1", Node: "w2", Image: "couchdb"},
	}}
	d.Arms[1].Cluster = &Cluster{Pods: []PodRun{
		{Role: RoleK6, Step: benchv1.StepReads, Pod: "qj-reads-0", Node: "w4", Image: "grafana/k6"},
		{Role: RoleRunner, Step: benchv1.StepSeed, Pod: "qj-seed", Node: "w1", Image: "couchbench"},
		{Role: RoleCouchDB, Pod: "qj-couchdb-0", Node: "w4", Image: "couchdb"},
	}}
	return d
}

func tableTitled(tables []Table, title string) (Table, int) {
	i := slices.IndexFunc(tables, func(t Table) bool { return t.Title == title })
	if i < 0 {
		return Table{}, i
	}
	return tables[i], i
}

// Every pod of the run is a row, by arm in the document's order, then CouchDB, runners and
// k6 by step and name; exactly the load generators on a node of their own arm's CouchDB are
// marked, and a line per arm adds the nodes up.
func TestPlacementListsEveryPodAndMarksSharedNodes(t *testing.T) {
	tables := NewReport(placementDocument()).Tables()
	placement, at := tableTitled(tables, "Placement")
	if _, provenance := tableTitled(tables, "Provenance"); at != len(tables)-1 || provenance < 0 || provenance > at {
		t.Fatalf("placement is table %d of %d, provenance %d: want placement last, after provenance", at, len(tables), provenance)
	}
	const shared = "shares a node with its CouchDB"
	want := [][]string{
		{"spidermonkey", "couchdb", "", "sm-couchdb-0", "w1", ""},
		{"spidermonkey", "couchdb", "", "sm-couchdb-1", "w2", ""},
		{"spidermonkey", "couchdb", "", "sm-couchdb-2", "w3", ""},
		{"spidermonkey", "runner", "seed", "sm-seed", "w4", ""},
		{"spidermonkey", "runner", "index", "sm-index", "w1", shared},
		{"spidermonkey", "k6", "reads", "sm-reads-0", "w4", ""},
		{"spidermonkey", "k6", "reads", "sm-reads-1", "w2", shared},
		{"quickjs", "couchdb", "", "qj-couchdb-0", "w4", ""},
		{"quickjs", "runner", "seed", "qj-seed", "w1", ""},
		{"quickjs", "k6", "reads", "qj-reads-0", "w4", shared},
	}
	if !slices.EqualFunc(placement.Rows, want, slices.Equal) {
		t.Errorf("rows:\n%q\nwant:\n%q", placement.Rows, want)
	}
	if wantMarked := []bool{false, false, false, false, true, false, true, false, false, true}; !slices.Equal(placement.Marked, wantMarked) {
		t.Errorf("marked %v, want %v", placement.Marked, wantMarked)
	}
	wantLines := []string{
		"spidermonkey: CouchDB on 3 node(s) (w1, w2, w3); load generators on 3 node(s) (w1, w2, w4), 2 of them shared with CouchDB",
		"quickjs: CouchDB on 1 node(s) (w4); load generators on 2 node(s) (w1, w4), 1 of them shared with CouchDB",
	}
	if !slices.Equal(placement.Lines, wantLines) {
		t.Errorf("lines:\n%q\nwant:\n%q", placement.Lines, wantLines)
	}

	var buf bytes.Buffer
	if err := WriteMarkdown(&buf, tables); err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(buf.String(), "### Placement\n\n")
	for _, want := range []string{
		"| spidermonkey | runner  | index | sm-index     | w1   | shares a node with its CouchDB |\n",
		"| quickjs      | runner  | seed  | qj-seed      | w1   |                                |\n",
		"|\n\n- " + wantLines[0] + "\n- " + wantLines[1] + "\n\nLoad generators: the runner and k6 pods.",
	} {
		if !strings.Contains(section, want) {
			t.Errorf("the placement section lacks %q:\n%s", want, section)
		}
	}
}

// A run against an existing CouchDB: without a cluster (`couchbench run`) there is no
// placement; with the operator's load generators only, they are listed, none marked.
func TestPlacementWithoutCouchDBPods(t *testing.T) {
	d := sampleDocument(2)
	var buf bytes.Buffer
	if err := WriteMarkdown(&buf, NewReport(d).Tables()); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "Placement") {
		t.Errorf("a placement section without pods:\n%s", buf.String())
	}

	d.Arms[1].Cluster = &Cluster{Pods: []PodRun{{Role: RoleRunner, Step: benchv1.StepSeed, Pod: "seed", Node: "w1"}}}
	placement, _ := tableTitled(NewReport(d).Tables(), "Placement")
	wantLines := []string{"arm1: CouchDB's pods not recorded (an existing CouchDB); load generators on 1 node(s) (w1)"}
	if len(placement.Rows) != 1 || placement.Rows[0][0] != "arm1" || slices.Contains(placement.Marked, true) ||
		!slices.Equal(placement.Lines, wantLines) {
		t.Errorf("placement %+v, want arm1's runner unmarked and %q", placement, wantLines)
	}
}

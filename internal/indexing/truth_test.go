package indexing

// Build times against CouchDB's own log, on real Apache CouchDB 3.4.3 from the kit (the
// single node and the 3-node cluster that `make test` starts): every view language of the
// kit × both reducers, each build checked against the span its nodes' logs show, from the
// first "Starting index update" to the last "Index update finished" over every shard copy.
// This is a check of what the numbers mean, not of how fast anything is: the builds take
// whatever they take, and the machine may be busy with the other suites.

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/couchdbtest"
	"github.com/couchbench/couchbench/internal/couchlog"
	"github.com/couchbench/couchbench/internal/dataset"
	"github.com/couchbench/couchbench/internal/measured"
)

func TestBuildTimesAgreeWithTheServerLogOnRealCouchDB(t *testing.T) {
	for _, tc := range []struct {
		name   string
		server func(testing.TB) *couchdbtest.Server
		// Enough documents for builds of about 3 to 20 s on these 2-core machines.
		docs int64
	}{
		{"single node", couchdbtest.Single, 60000},
		{"3-node cluster", couchdbtest.Cluster, 25000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := tc.server(t)
			c := srv.Client(t, couch.Options{MaxConns: 16})
			db := srv.NewDB(t, "truth")
			gen := dataset.New(1, benchv1.DocumentProfile{Type: benchv1.DocumentSmall})
			seed(t, c, db, gen, tc.docs)
			srv.WaitForEveryCopy(t, db, tc.docs)
			var rows []string
			for _, language := range []string{"javascript", "javascript_quickjs", "python", "erlang"} {
				for _, reducer := range []benchv1.Reducer{benchv1.ReducerBuiltin, benchv1.ReducerCustom} {
					run, err := Build(context.Background(), c, srv.Nodes, Options{
						DB: db, Documents: tc.docs, Replicas: srv.Replicas(), Language: language, Reducer: reducer,
						Nonce:    fmt.Sprintf("truth-%s-%s-%s", couchdbtest.RandomID(), strings.ReplaceAll(language, "_", ""), reducer),
						Expected: gen.Expected(tc.docs),
					})
					if err != nil {
						t.Fatalf("%s/%s: %v", language, reducer, err)
					}
					rows = append(rows, checkAgainstLog(t, srv, run, language, reducer))
				}
			}
			t.Logf("%d documents, q=2, n=%d:\n%-18s %-7s %9s %9s %9s %8s %8s\n%s", tc.docs, srv.Replicas(),
				"language", "reducer", "runner s", "±ms", "log s", "diff ms", "diff %", strings.Join(rows, "\n"))
		})
	}
}

// checkAgainstLog compares one build with the server's log and returns a table row.
func checkAgainstLog(t *testing.T, srv *couchdbtest.Server, run measured.IndexBuild, language string, reducer benchv1.Reducer) string {
	t.Helper()
	label := fmt.Sprintf("%s/%s (%s)", language, reducer, run.DesignDoc)
	copies := 2 * srv.Replicas()
	// CouchDB's logger writes its lines after the fact: on a loaded machine a copy's answer can
	// come before its "finished" line is in the file (its timestamp is the update's own). Read
	// the log until it shows every copy finished, for a minute.
	var span couchlog.Span
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Second) {
		span = couchlog.BuildSpan(srv.IndexUpdates(t), func(ddocID string) bool { return isOfBuild(ddocID, run.DesignDoc) })
		if span.Finished >= copies || time.Now().After(deadline) {
			break
		}
	}
	if span.Copies != copies || span.Finished != copies || len(run.Copies) != copies {
		t.Fatalf("%s: the log shows %d copies started and %d finished, the runner %d copies; want %d (q=2 x n=%d)",
			label, span.Copies, span.Finished, len(run.Copies), copies, srv.Replicas())
	}
	diff := run.Built - span.Duration()
	tolerance := run.BuiltUncertainty + span.Duration()/100
	if diff.Abs() > tolerance {
		t.Errorf("%s: built %v ±%v, the log's span %v: %v apart, more than the uncertainty + 1%% (%v)",
			label, run.Built, run.BuiltUncertainty, span.Duration(), diff, tolerance)
	}
	// Every copy answered when the log says its index was written, within the build's own
	// tolerance on either side. Not strictly after: CouchDB answers a waiting view request from
	// the state its updater's last batch wrote (couch_index's new_state), and logs "Index update
	// finished" only once that updater has exited, later on a loaded machine (docs/measurement.md).
	for _, cp := range run.Copies {
		var finished time.Time
		for copyOf, at := range span.Finishes {
			if copyOf.Node == cp.Node && strings.HasPrefix(copyOf.Shard, "shards/"+cp.Range+"/") {
				finished = at
			}
		}
		if answered := run.StartedAt.Add(cp.Written); answered.Sub(finished).Abs() > tolerance {
			t.Errorf("%s: copy %s on %s answered at %s, the log's finish at %s: more than %v apart", label, cp.Range, cp.Node,
				answered.Format(time.RFC3339Nano), finished.Format(time.RFC3339Nano), tolerance)
		}
	}
	return fmt.Sprintf("%-18s %-7s %9.3f %9.1f %9.3f %+8.1f %+7.2f%%", language, reducer, run.Built.Seconds(),
		float64(run.BuiltUncertainty.Microseconds())/1000, span.Duration().Seconds(), float64(diff.Microseconds())/1000,
		100*diff.Seconds()/span.Duration().Seconds())
}

// isOfBuild tells whether the log names one of the build's design documents: its own or a
// twin (see Build).
func isOfBuild(logged, ddocID string) bool {
	k, ok := strings.CutPrefix(logged, ddocID+".")
	return logged == ddocID || ok && k != "" && strings.Trim(k, "0123456789") == ""
}

// seed loads documents 0..docs-1 of the dataset.
func seed(t *testing.T, c *couch.Client, db string, gen *dataset.Generator, docs int64) {
	t.Helper()
	for first := int64(0); first < docs; first += 1000 {
		batch := make([]json.RawMessage, 0, 1000)
		for i := first; i < min(first+1000, docs); i++ {
			batch = append(batch, gen.JSON(i))
		}
		if _, err := c.BulkDocs(context.Background(), db, batch); err != nil {
			t.Fatal(err)
		}
	}
}

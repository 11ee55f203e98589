package writes_test

// On real Apache CouchDB 3.4.3: the single node of the project's kit (internal/couchdbtest,
// started by `make test`).

import (
	"context"
	"testing"
	"time"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/couchdbtest"
	"github.com/couchbench/couchbench/internal/dataset"
	"github.com/couchbench/couchbench/internal/names"
	"github.com/couchbench/couchbench/internal/writes"
)

// Each mode's result is handed to Ended as the mode ends, before the next mode starts, and
// is the result Round returns; what landed is what CouchDB acknowledged.
func TestEachModeIsReportedAsItEndsOnRealCouchDB(t *testing.T) {
	srv := couchdbtest.Single(t)
	w := &benchv1.WritesWorkload{BulkBatchSizes: []int32{10}, BatchOK: &benchv1.BatchOKWrites{Clients: 2}, Serial: true}
	modes := writes.Modes(w)
	profileDB := "cb-writes-" + couchdbtest.RandomID()
	for _, m := range modes {
		srv.DeleteLater(t, names.WriteDatabase(profileDB, m.Name))
	}
	type ended struct {
		result writes.Result
		at     time.Time
	}
	var reported []ended
	opts := writes.Options{
		ProfileDB: profileDB, Shards: 1, Replicas: 1, Duration: 300 * time.Millisecond,
		Generator: dataset.New(1, benchv1.DocumentProfile{Type: benchv1.DocumentSmall}),
		Ended:     func(r writes.Result) { reported = append(reported, ended{r, time.Now()}) },
	}
	res, err := writes.Round(context.Background(), srv.Client(t, couch.Options{MaxConns: 4}), modes, opts, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != len(modes) || len(reported) != len(res) {
		t.Fatalf("%d modes, %d results, %d reported", len(modes), len(res), len(reported))
	}
	for i, r := range res {
		got := reported[i].result
		if got.Mode != modes[i].Name || got.Mode != r.Mode || got.Created != r.Created || got.Accepted != r.Accepted ||
			!got.FinishedAt.Equal(r.FinishedAt) {
			t.Errorf("mode %d: reported %+v, returned %+v", i, got, r)
		}
		if i+1 < len(res) && reported[i].at.After(res[i+1].StartedAt) {
			t.Errorf("mode %s was reported at %s, after mode %s started (%s)", r.Mode, reported[i].at.Format(time.StampMicro),
				res[i+1].Mode, res[i+1].StartedAt.Format(time.StampMicro))
		}
		if r.Created+r.Accepted == 0 || r.Errors != 0 || r.Stored != r.Created+r.Accepted {
			t.Errorf("mode %s: %d created, %d accepted, %d errors, %d stored", r.Mode, r.Created, r.Accepted, r.Errors, r.Stored)
		}
	}
}

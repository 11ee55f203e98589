package couch_test

// RecreateDB against real Apache CouchDB 3.4.3, the kit's single node that `make test`
// starts (internal/couchdbtest). The create CouchDB refuses right after a delete comes when
// the machine is busy, a few times in a hundred here, so this cannot force it; it checks that
// every database RecreateDB makes takes documents at once. internal/couch's
// TestRecreateDBWaitsForTheDeletion injects the refusal.

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/couchdbtest"
)

func TestRecreateDBOnRealCouchDB(t *testing.T) {
	s := couchdbtest.Single(t)
	c := s.Client(t, couch.Options{})
	db := couchdbtest.DBName("recreate")
	s.DeleteLater(t, db)
	ctx := context.Background()
	docs := []json.RawMessage{json.RawMessage(`{"_id":"a"}`), json.RawMessage(`{"_id":"b"}`)}
	for i := range 40 {
		if err := c.RecreateDB(ctx, db, 2, s.Replicas()); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		res, err := c.BulkDocs(ctx, db, docs)
		if err != nil {
			t.Fatalf("round %d: _bulk_docs into the new database: %v", i, err)
		}
		for _, r := range res {
			if r.Error != "" {
				t.Fatalf("round %d: %s: %s (%s); the database was not made afresh", i, r.ID, r.Error, r.Reason)
			}
		}
	}
}

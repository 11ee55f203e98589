package couch_test

// RecreateDB against real Apache CouchDB 3.4.3, the kit's single node that `make test`
// starts (internal/couchdbtest). The create CouchDB refuses right after a delete comes when
// the machine is busy, a few times in a hundred here, so this cannot force it; it checks that
// every database RecreateDB makes takes documents at once. internal/couch's
// TestRecreateDBWaitsForTheDeletion injects the refusal.

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
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

// Loops of recreate, write, delete and delete again, side by side, as the writes step runs
// them for each mode and round. With six such loops on this node CouchDB 3.4.3 answered
// 500 "badarg" to most second DELETEs (see DeleteDB), and this test failed before DeleteDB
// tried again; every DELETE must now come out deleted, or missing for the second.
func TestDeleteDBRidesOutBadargOnRealCouchDB(t *testing.T) {
	s := couchdbtest.Single(t)
	c := s.Client(t, couch.Options{})
	ctx := context.Background()
	const loops, rounds, writes = 6, 4, 20
	var wg sync.WaitGroup
	errs := make(chan error, loops)
	for loop := range loops {
		db := couchdbtest.DBName(fmt.Sprintf("delete%d", loop))
		s.DeleteLater(t, db)
		wg.Go(func() {
			for round := range rounds {
				if err := c.RecreateDB(ctx, db, 2, s.Replicas()); err != nil {
					errs <- fmt.Errorf("loop %d, round %d: %w", loop, round, err)
					return
				}
				for range writes {
					if _, err := c.PostDoc(ctx, db, json.RawMessage(`{"v":1}`), false); err != nil {
						errs <- fmt.Errorf("loop %d, round %d: %w", loop, round, err)
						return
					}
				}
				if _, err := c.DeleteDB(ctx, db); err != nil {
					errs <- fmt.Errorf("loop %d, round %d, first DELETE: %w", loop, round, err)
					return
				}
				if deleted, err := c.DeleteDB(ctx, db); err != nil || deleted {
					errs <- fmt.Errorf("loop %d, round %d, second DELETE: deleted %v, %v; want a missing database", loop, round, deleted, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

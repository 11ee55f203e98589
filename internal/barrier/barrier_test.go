package barrier

// The barrier against real Apache CouchDB 3.4.3 from the project's kit (internal/couchdbtest,
// started by `make test`): its protocol is CouchDB's local documents and _local_docs.

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/couchdbtest"
)

// A part that arrives before its database exists waits for it; the parts leave once the last
// one has arrived, not before; and the database shows none of it as documents.
func TestPartsLeaveTogetherOnceTheLastArrivesOnRealCouchDB(t *testing.T) {
	srv := couchdbtest.Single(t)
	c := srv.Client(t, couch.Options{})
	db := couchdbtest.DBName(t.Name())
	srv.DeleteLater(t, db)
	left := make(chan time.Time, 2)
	errs := make(chan error, 2)
	for part := range 2 {
		go func() {
			at, err := Barrier{Client: c, DB: db, Part: part, Parts: 3}.Wait(context.Background(), "seed")
			left <- at
			errs <- err
		}()
	}
	time.Sleep(300 * time.Millisecond)
	if _, err := c.CreateDB(context.Background(), db, 1, 1); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	select {
	case <-left:
		t.Fatal("a part left the barrier before part 2 arrived")
	default:
	}
	last := time.Now()
	if _, err := (Barrier{Client: c, DB: db, Part: 2, Parts: 3}).Wait(context.Background(), "seed"); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if at := <-left; at.Before(last) {
			t.Errorf("a part left at %s, before the last arrived at %s", at.Format(time.StampMicro), last.Format(time.StampMicro))
		}
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	info, err := c.DBInfo(context.Background(), db)
	if err != nil || info.DocCount != 0 {
		t.Errorf("the database counts %d documents (%v): the barrier must leave none", info.DocCount, err)
	}
}

// A part that never comes ends the wait with a message that names it, and the progress
// reports of the wait name it meanwhile; a part that only announces itself (Arrive) does
// not wait.
func TestMissingPartIsNamedOnRealCouchDB(t *testing.T) {
	srv := couchdbtest.Single(t)
	c := srv.Client(t, couch.Options{})
	db := srv.NewDB(t, "")
	if err := (Barrier{Client: c, DB: db, Part: 1, Parts: 3}).Arrive(context.Background(), "writes"); err != nil {
		t.Fatal(err)
	}
	var (
		mu      sync.Mutex
		reports [][]int
	)
	_, err := Barrier{Client: c, DB: db, Part: 0, Parts: 3, Timeout: time.Second, ProgressInterval: 50 * time.Millisecond,
		Progress: func(missing []int, _ time.Duration) {
			mu.Lock()
			defer mu.Unlock()
			reports = append(reports, missing)
		}}.Wait(context.Background(), "writes")
	if err == nil || !strings.Contains(err.Error(), "parts [2] of 3 did not arrive within 1s") {
		t.Errorf("error %v: want part 2 named", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reports) == 0 {
		t.Error("no progress report during a wait of a second")
	}
	for _, missing := range reports {
		if !slices.Equal(missing, []int{2}) {
			t.Errorf("progress report names parts %v missing, want [2]", missing)
		}
	}
}

package couchdbtest

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/couchbench/couchbench/internal/couchlog"
)

// IndexUpdates reads the index update lines of every node's log (the kit writes node i's log
// to Dir()/node<i>/couchdb.log), node 1's first.
func (s *Server) IndexUpdates(t testing.TB) []couchlog.IndexUpdate {
	t.Helper()
	var all []couchlog.IndexUpdate
	for i := range s.URLs {
		path := filepath.Join(s.dir, "node"+strconv.Itoa(i+1), "couchdb.log")
		f, err := os.Open(path)
		if err != nil {
			t.Fatalf("reading node %d's log: %v", i+1, err)
		}
		updates, err := couchlog.IndexUpdates(f)
		_ = f.Close()
		if err != nil {
			t.Fatalf("reading %s: %v", path, err)
		}
		all = append(all, updates...)
	}
	return all
}

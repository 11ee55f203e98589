package couchlog

import (
	"strings"
	"testing"
	"time"
)

// Lines in the format of Apache CouchDB 3.4.3's log (the kit's 3-node cluster, 2026-11-24),
// with a later update of one copy that a request after the build started, and lines of
// other builds and other kinds.
const log = `[notice] 2026-11-24T12:05:08.800000Z couchdb@127.0.0.1 <0.9700.0> 1a2b3c4d5e 127.0.0.1:15984 127.0.0.1 admin PUT /db/_design/cb-idx-1 201 ok 40
[info] 2026-11-24T12:05:08.867212Z couchdb@127.0.0.1 <0.9789.0> -------- Starting index update for db: shards/80000000-ffffffff/db.1795521878 idx: _design/cb-idx-1
[info] 2026-11-24T12:05:08.869001Z couchdb@127.0.0.1 <0.9790.0> -------- Starting index update for db: shards/00000000-7fffffff/db.1795521878 idx: _design/cb-idx-1.3
[info] 2026-11-24T12:05:08.870000Z couchdb@127.0.0.1 <0.9791.0> -------- Starting index update for db: shards/00000000-7fffffff/db.1795521878 idx: _design/cb-idx-10
[info] 2026-11-24T12:05:14.100000Z couchdb@127.0.0.1 <0.9790.0> -------- Index update finished for db: shards/00000000-7fffffff/db.1795521878 idx: _design/cb-idx-1.3
[info] 2026-11-24T12:05:15.753931Z couchdb@127.0.0.1 <0.9789.0> -------- Index update finished for db: shards/80000000-ffffffff/db.1795521878 idx: _design/cb-idx-1
[info] 2026-11-24T12:05:16.000000Z couchdb@127.0.0.1 <0.9791.0> -------- Index update finished for db: shards/00000000-7fffffff/db.1795521878 idx: _design/cb-idx-10
[info] 2026-11-24T12:05:16.200000Z couchdb@127.0.0.1 <0.9799.0> -------- Starting index update for db: shards/80000000-ffffffff/db.1795521878 idx: _design/cb-idx-1
[info] 2026-11-24T12:05:16.203000Z couchdb@127.0.0.1 <0.9799.0> -------- Index update finished for db: shards/80000000-ffffffff/db.1795521878 idx: _design/cb-idx-1
`

func TestBuildSpanFromTheLog(t *testing.T) {
	updates, err := IndexUpdates(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	if len(updates) != 8 {
		t.Fatalf("%d index update lines, want 8 (the access log line left out)", len(updates))
	}
	if u := updates[0]; u.Node != "couchdb@127.0.0.1" || u.Event != Started || u.Shard != "shards/80000000-ffffffff/db.1795521878" ||
		u.DesignDoc != "_design/cb-idx-1" || !u.At.Equal(time.Date(2026, 11, 24, 12, 5, 8, 867212000, time.UTC)) {
		t.Errorf("first line read as %+v", u)
	}
	// cb-idx-1 and its twin cb-idx-1.3, not cb-idx-10.
	span := BuildSpan(updates, func(d string) bool { return d == "_design/cb-idx-1" || d == "_design/cb-idx-1.3" })
	if span.Copies != 2 || span.Finished != 2 {
		t.Errorf("%d copies started, %d finished; want 2 and 2", span.Copies, span.Finished)
	}
	// From the first start to the last finish of the build; the later update of one copy
	// (16.200 to 16.203) is not part of it.
	if want := 15753931*time.Microsecond - 8867212*time.Microsecond; span.Duration() != want {
		t.Errorf("span %v, want %v", span.Duration(), want)
	}
}

func TestIndexUpdatesRefusesABadTimestamp(t *testing.T) {
	_, err := IndexUpdates(strings.NewReader("[info] yesterday couchdb@127.0.0.1 <0.1.0> -------- Starting index update for db: x idx: _design/y\n"))
	if err == nil {
		t.Fatal("a line with a timestamp that is not RFC 3339 was read without an error")
	}
}

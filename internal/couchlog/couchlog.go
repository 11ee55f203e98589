// Package couchlog reads what Apache CouchDB's own log says about index builds: the truth a
// build's time is checked against.
//
// CouchDB's couch_index_updater logs, at level info, one line when it starts updating the
// index of a design document on one shard copy and one when that update has finished:
//
//	[info] 2026-11-24T12:05:08.867212Z couchdb@127.0.0.1 <0.9789.0> -------- Starting index update
//	  for db: shards/80000000-ffffffff/db.1795521878 idx: _design/cb-idx-1
//	[info] 2026-11-24T12:05:15.753931Z couchdb@127.0.0.1 <0.9789.0> -------- Index update finished
//	  for db: shards/80000000-ffffffff/db.1795521878 idx: _design/cb-idx-1
//
// (each on one line).
//
// A build, as the server saw it, spans the first start to the last finish over every copy on
// every node.
package couchlog

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"time"
)

// Event is what an index update line says happened.
type Event string

// The two events of an index update.
const (
	Started  Event = "Starting index update"
	Finished Event = "Index update finished"
)

// IndexUpdate is one line of the log about an index update.
type IndexUpdate struct {
	At    time.Time
	Node  string
	Event Event
	// Shard is the copy's node-local database, e.g. "shards/80000000-ffffffff/db.1795521878".
	Shard string
	// DesignDoc is the design document the index was opened through, e.g. "_design/cb-idx-1".
	DesignDoc string
}

var lineRE = regexp.MustCompile(`^\[info\] (\S+) (\S+) <[^>]*> \S+ (Starting index update|Index update finished) for db: (\S+) idx: (\S+)$`)

// IndexUpdates reads the index update lines of a CouchDB log, in the order they were
// written; other lines are skipped.
func IndexUpdates(r io.Reader) ([]IndexUpdate, error) {
	var out []IndexUpdate
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		m := lineRE.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, m[1])
		if err != nil {
			return out, fmt.Errorf("index update line %q: %w", sc.Text(), err)
		}
		out = append(out, IndexUpdate{At: at, Node: m[2], Event: Event(m[3]), Shard: m[4], DesignDoc: m[5]})
	}
	return out, sc.Err()
}

// Span is one build as the log shows it.
type Span struct {
	// First is the first copy's start, Last the last copy's finish.
	First, Last time.Time
	// Copies counts the (node, shard) copies whose update started; Finished those of them
	// whose update also finished.
	Copies, Finished int
	// Finishes is when each copy's update finished, by node and shard.
	Finishes map[Copy]time.Time
}

// Copy names a shard copy: one node's file of one shard range.
type Copy struct{ Node, Shard string }

// Duration is the build's time: Last - First.
func (s Span) Duration() time.Duration { return s.Last.Sub(s.First) }

// BuildSpan finds the build of the index of the design documents that ofBuild accepts, in
// updates from every node's log: per copy, its first start and the first finish after it. A
// later start of the same copy (a request after the build, seeing a change the index did not
// hold) is a new update, not part of the build.
func BuildSpan(updates []IndexUpdate, ofBuild func(designDoc string) bool) Span {
	span := Span{Finishes: map[Copy]time.Time{}}
	started := map[Copy]bool{}
	for _, u := range updates {
		if !ofBuild(u.DesignDoc) {
			continue
		}
		c := Copy{u.Node, u.Shard}
		switch {
		case u.Event == Started && !started[c]:
			started[c] = true
			span.Copies++
			if span.First.IsZero() || u.At.Before(span.First) {
				span.First = u.At
			}
		case u.Event == Finished && started[c]:
			if _, done := span.Finishes[c]; done {
				continue
			}
			span.Finishes[c] = u.At
			span.Finished++
			if u.At.After(span.Last) {
				span.Last = u.At
			}
		}
	}
	return span
}

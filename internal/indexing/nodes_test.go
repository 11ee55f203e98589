package indexing

// The node checks around a build, on readings made up here (no server). On the real
// server they are internal/runner's TestNodeStoppedMidBuildOnRealCouchDB.

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestNodesThatStayedUpPass(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	nodes := []string{"a@x", "b@x"}
	reading := func(mapDoc int64, uptime time.Duration, at time.Time) nodeReading {
		return nodeReading{mapDoc: mapDoc, uptime: uptime, sent: at, answered: at}
	}
	before := []nodeReading{reading(100, 50*time.Second, t0), reading(7, 2*time.Second, t0)}
	cases := []struct {
		name    string
		after   []nodeReading
		want    string // "" passes; else a part of the error
		mapDocs int64
	}{
		{"both up all along", []nodeReading{reading(600, 60*time.Second, t0.Add(10*time.Second)), reading(507, 12*time.Second, t0.Add(10*time.Second))}, "", 1000},
		// Whole seconds: a node may report a second less than passed.
		{"uptime rounded down", []nodeReading{reading(600, 59*time.Second, t0.Add(10*time.Second)), reading(507, 11*time.Second, t0.Add(10*time.Second))}, "", 1000},
		// b restarted: 10 s passed but it has been up 5 s, though that is more than its 2 s before.
		{"restarted", []nodeReading{reading(600, 60*time.Second, t0.Add(10*time.Second)), reading(40, 5*time.Second, t0.Add(10*time.Second))}, "node b@x restarted", 533},
		{"down at the end", []nodeReading{reading(600, 60*time.Second, t0.Add(10*time.Second)), {mapDoc: -1, uptime: -1, err: errors.New("connection refused\nmore")}}, "node b@x could not say how long it had been up after the build: connection refused ...", -1},
	}
	for _, c := range cases {
		err := checkNodesStayed(nodes, before, c.after)
		if c.want == "" && err != nil || c.want != "" && (!errors.Is(err, ErrNodeInterrupted) || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: %v; want %q", c.name, err, c.want)
		}
		if got := mapDocGrowth(before, c.after); got != c.mapDocs {
			t.Errorf("%s: map_doc growth %d, want %d", c.name, got, c.mapDocs)
		}
	}
	// A server that does not say its uptime (not CouchDB): nothing to check.
	unknown := []nodeReading{{mapDoc: -1, uptime: -1}, {mapDoc: -1, uptime: -1}}
	if err := checkNodesStayed(nodes, unknown, unknown); err != nil {
		t.Errorf("no uptimes: %v", err)
	}
}

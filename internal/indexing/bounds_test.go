package indexing

// The pure parts of Build: which design document each shard range is asked through, and
// what the copies' answers bound the build's time to. No server.

import (
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/couchbench/couchbench/internal/couch"
)

// copiesOf makes the shard map of a database with q equal ranges, as CouchDB cuts them, on
// one node.
func copiesOf(q int) []couch.ShardCopy {
	var out []couch.ShardCopy
	size := (uint64(1) << 32) / uint64(q)
	for i := range q {
		hi := uint64(i+1)*size - 1
		if i == q-1 {
			hi = 1<<32 - 1
		}
		r := fmt.Sprintf("%08x-%08x", uint64(i)*size, hi)
		out = append(out, couch.ShardCopy{Node: "n@x", Range: r, Name: "shards/" + r + "/db.1"})
	}
	return out
}

func TestEveryRangeGetsADesignDocumentThatHashesThere(t *testing.T) {
	const ddocID = "_design/cb-idx-run-small-builtin-1"
	for _, q := range []int{1, 2, 3, 8, 16, 64} {
		byRange, err := designDocsByRange(ddocID, copiesOf(q))
		if err != nil {
			t.Fatalf("q=%d: %v", q, err)
		}
		if len(byRange) != q {
			t.Errorf("q=%d: %d ranges named, want every one", q, len(byRange))
		}
		own := 0
		for r, id := range byRange {
			lo, hi, _ := strings.Cut(r, "-")
			l, _ := strconv.ParseUint(lo, 16, 32)
			h, _ := strconv.ParseUint(hi, 16, 32)
			if c := uint64(crc32.ChecksumIEEE([]byte(id))); c < l || c > h {
				t.Errorf("q=%d: %s hashes to %08x, outside its range %s", q, id, c, r)
			}
			if id == ddocID {
				own++
			}
		}
		if own != 1 {
			t.Errorf("q=%d: the design document itself names %d ranges, want its own", q, own)
		}
	}
	if _, err := designDocsByRange(ddocID, []couch.ShardCopy{{Range: "zz-00", Name: "x"}}); err == nil {
		t.Error("a range that is not <hex>-<hex> was taken")
	}
}

// The build lies between the last answer less the answer delay less the moment it was seen
// started, and the last answer less the first request: Built is the middle, the uncertainty
// half the width. Queryable is when every range had a written copy, from the same start.
func TestBuildTimeIsTheMiddleOfWhatTheAnswersBound(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	wait := func(r, node string, wrote, answered int) copyWait {
		return copyWait{copy: couch.ShardCopy{Node: node, Range: r}, ex: couch.Exchange{Wrote: at(wrote), Answered: at(answered)}, asked: 1}
	}
	b := &build{origin: at(0), startedBy: at(10), answerDelay: 4 * time.Millisecond, waits: []copyWait{
		wait("a", "n1", 0, 3000), wait("a", "n2", 1, 5000), wait("b", "n1", 1, 4000), wait("b", "n2", 2, 6000),
	}}
	built, uncertainty := b.built()
	// [6000-4-10, 6000-0] = [5986, 6000] ms.
	if built != 5993*time.Millisecond || uncertainty != 7*time.Millisecond {
		t.Errorf("built %v ±%v, want 5.993s ±7ms", built, uncertainty)
	}
	// Range a had a copy at 3000, range b at 4000: 4000 ms after the first request, less
	// half of the 10 ms to the start seen.
	if q := b.queryable(); q != 3995*time.Millisecond {
		t.Errorf("queryable %v, want 3.995s", q)
	}
	if last := b.last(); last.copy.Node != "n2" || last.copy.Range != "b" {
		t.Errorf("last copy %+v, want b on n2", last.copy)
	}
	if err := b.err(); err != nil {
		t.Errorf("a build whose copies all answered once: %v", err)
	}
	// A build shorter than the answer delay is still not negative.
	short := &build{origin: at(0), startedBy: at(2), answerDelay: 5 * time.Millisecond, waits: []copyWait{wait("a", "n1", 0, 3)}}
	if built, uncertainty := short.built(); built != 1500*time.Microsecond || uncertainty != 1500*time.Microsecond {
		t.Errorf("a 3 ms build with a 5 ms answer delay: %v ±%v, want 1.5ms ±1.5ms", built, uncertainty)
	}
	b.waits[1].asked = 2
	if err := b.err(); err == nil || !strings.Contains(err.Error(), "n2") {
		t.Errorf("a copy asked twice: %v; want an error naming its node", err)
	}
}

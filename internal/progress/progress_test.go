package progress

import (
	"sync/atomic"
	"testing"
	"time"
)

// No server: the pacer's own contract. Nothing is asserted on timing beyond "reports came,
// and none after stop returned".
func TestEveryReportsUntilStopped(t *testing.T) {
	var n atomic.Int64
	stop := Every(time.Millisecond, func() { n.Add(1) })
	for n.Load() < 3 {
		time.Sleep(time.Millisecond)
	}
	stop()
	stop() // a second stop is harmless
	calls := n.Load()
	time.Sleep(5 * time.Millisecond)
	if n.Load() != calls {
		t.Fatalf("%d reports after stop returned", n.Load()-calls)
	}
}

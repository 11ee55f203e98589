package measured

import (
	"time"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
)

// ViewRead is one full read of a view (viewreads.ReadOnce).
type ViewRead struct {
	// StartedAt is when the read began: the order of the reads, which arms and views
	// alternate so that drift spreads over all of them.
	StartedAt time.Time     `json:"startedAt,omitzero"`
	Rows      int64         `json:"rows"`
	Bytes     int64         `json:"bytes"`
	Elapsed   time.Duration `json:"elapsedNs"`
	// CPUSeconds is the CPU time the arm's CouchDB spent on the read, when the run reads it
	// (see IndexBuild.CPUSeconds); 0: not measured.
	CPUSeconds float64 `json:"cpuSeconds,omitempty"`
}

// ViewReads is every read of one view.
type ViewReads struct {
	View  benchv1.ViewReadKind `json:"view"`
	Reads []ViewRead           `json:"reads"`
	// WarmUp is the read before the repetitions, when asked for: reported, not counted.
	WarmUp *ViewRead `json:"warmUp,omitempty"`
}

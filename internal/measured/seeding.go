package measured

import (
	"errors"
	"fmt"
	"time"
)

// Seeding is what a load did (seeding.Load). Stored counts documents known to be in the
// database at the end: Created by this load plus AlreadyPresent (conflicts: written by an
// earlier attempt whose answer was lost, or before the load).
type Seeding struct {
	Stored         int64         `json:"stored"`
	Created        int64         `json:"created"`
	AlreadyPresent int64         `json:"alreadyPresent"`
	Failed         int64         `json:"failed"`
	FailedSamples  []string      `json:"failedSamples,omitempty"`
	Retries        int64         `json:"retries"`
	Bytes          int64         `json:"bytes"`
	Elapsed        time.Duration `json:"elapsedNs"`
	// StartedAt and FinishedAt bound the load, by the loader's clock.
	StartedAt  time.Time `json:"startedAt,omitzero"`
	FinishedAt time.Time `json:"finishedAt,omitzero"`
	// Parts are the loads of the runners that shared the seeding, by part (JoinSeedings); empty
	// when one runner loaded everything.
	Parts []Seeding `json:"parts,omitempty"`
	// StartSpread is how far apart the parts started (last start - first start): the
	// barrier's precision, already inside Elapsed.
	StartSpread time.Duration `json:"startSpreadNs,omitempty"`
	// CPUSeconds is the CPU time the arm's CouchDB spent over the load, when the run reads it
	// and one runner loads alone (see IndexBuild.CPUSeconds); 0: not measured.
	CPUSeconds float64 `json:"cpuSeconds,omitempty"`
}

// DocsPerSecond is documents stored per second of the load.
func (r Seeding) DocsPerSecond() float64 { return perSecond(float64(r.Stored), r.Elapsed) }

// MBPerSecond is megabytes (10^6) of document JSON stored per second.
func (r Seeding) MBPerSecond() float64 { return perSecond(float64(r.Bytes)/1e6, r.Elapsed) }

func perSecond(v float64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return v / d.Seconds()
}

// JoinSeedings is the seeding that parts loaded together, exactly: every document they
// stored over the time from the first part's start to the last part's end (so a part that
// started late or ran slow counts against the rate), with each part kept. Parts are in part
// order.
func JoinSeedings(parts []Seeding) Seeding {
	var total Seeding
	var lastStart time.Time
	for i, p := range parts {
		total.Add(p)
		if i == 0 || p.StartedAt.Before(total.StartedAt) {
			total.StartedAt = p.StartedAt
		}
		if p.StartedAt.After(lastStart) {
			lastStart = p.StartedAt
		}
		if p.FinishedAt.After(total.FinishedAt) {
			total.FinishedAt = p.FinishedAt
		}
	}
	total.Elapsed, total.StartSpread = total.FinishedAt.Sub(total.StartedAt), lastStart.Sub(total.StartedAt)
	total.Parts = parts
	return total
}

// Add counts o's documents, retries and bytes into r, keeping the first failed samples.
func (r *Seeding) Add(o Seeding) {
	r.Stored += o.Stored
	r.Created += o.Created
	r.AlreadyPresent += o.AlreadyPresent
	r.Failed += o.Failed
	r.Retries += o.Retries
	r.Bytes += o.Bytes
	for _, s := range o.FailedSamples {
		if len(r.FailedSamples) < maxFailedSamples {
			r.FailedSamples = append(r.FailedSamples, s)
		}
	}
}

// Fail counts n documents that did not store, keeping sample as an example while there
// are fewer than a handful.
func (r *Seeding) Fail(n int64, sample string) {
	r.Failed += n
	if len(r.FailedSamples) < maxFailedSamples {
		r.FailedSamples = append(r.FailedSamples, sample)
	}
}

// maxFailedSamples bounds the examples a seeding keeps of its failed documents.
const maxFailedSamples = 5

// ErrIncomplete is returned (wrapped) when documents failed to store.
var ErrIncomplete = errors.New("not every document was stored")

// Check turns failed documents into an error that says how many and gives examples.
func (r Seeding) Check() error {
	if r.Failed == 0 {
		return nil
	}
	return fmt.Errorf("%w: %d failed, for example %v", ErrIncomplete, r.Failed, r.FailedSamples)
}

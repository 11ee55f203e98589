package measured

import "time"

// Write is what one insert mode wrote (writes.Round).
type Write struct {
	Mode string `json:"mode"`
	// Repetition of the mode, from 0.
	Repetition int `json:"repetition,omitempty"`
	// Created counts documents acknowledged with 201 (on disk); Accepted those answered
	// 202 by batch=ok, which CouchDB keeps in memory first and can lose in a crash; Errors
	// those not acknowledged.
	Created  int64 `json:"created"`
	Accepted int64 `json:"accepted"`
	Errors   int64 `json:"errors"`
	// Stored is the database's doc_count after the mode: what actually landed.
	Stored  int64         `json:"stored"`
	Elapsed time.Duration `json:"elapsedNs"`
	// StartedAt and FinishedAt bound the writing, by the writer's clock.
	StartedAt  time.Time `json:"startedAt,omitzero"`
	FinishedAt time.Time `json:"finishedAt,omitzero"`
	// Clients is how many of the mode's clients this runner ran; set when runners shared
	// the mode (Parts holds each one's result).
	Clients int     `json:"clients,omitempty"`
	Parts   []Write `json:"parts,omitempty"`
	// CPUSeconds is the CPU time the arm's CouchDB spent from the first write to the count of
	// what landed (after batch=ok's settle), when the run reads it and one runner writes
	// alone (see IndexBuild.CPUSeconds); 0: not measured.
	CPUSeconds float64 `json:"cpuSeconds,omitempty"`
}

// DocsPerSecond is acknowledged documents (201 and 202) per second.
func (r Write) DocsPerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Created+r.Accepted) / r.Elapsed.Seconds()
}

// JoinWrites is the writes that parts did together, from each part's results in part order (the
// same modes and repetitions in the same order): per mode and repetition, every part's
// acknowledged documents over the first part's start to the last part's end, what landed as
// part 0 counted it, and each part's own result kept.
func JoinWrites(parts [][]Write) []Write {
	if len(parts) == 0 || len(parts[0]) == 0 {
		return nil
	}
	joined := make([]Write, 0, len(parts[0]))
	for i, first := range parts[0] {
		total := Write{Mode: first.Mode, Repetition: first.Repetition, Stored: first.Stored, StartedAt: first.StartedAt, FinishedAt: first.FinishedAt}
		for _, part := range parts {
			if i >= len(part) {
				continue
			}
			r := part[i]
			total.Created, total.Accepted, total.Errors = total.Created+r.Created, total.Accepted+r.Accepted, total.Errors+r.Errors
			if r.StartedAt.Before(total.StartedAt) {
				total.StartedAt = r.StartedAt
			}
			if r.FinishedAt.After(total.FinishedAt) {
				total.FinishedAt = r.FinishedAt
			}
			total.Parts = append(total.Parts, r)
		}
		total.Elapsed = total.FinishedAt.Sub(total.StartedAt)
		joined = append(joined, total)
	}
	return joined
}

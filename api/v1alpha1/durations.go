package v1alpha1

import "time"

// parseDuration reads a duration field. Admission (the field's pattern and CEL bounds, also
// applied by the runner's loader) guarantees a parseable, bounded value, so a failure
// here means the object bypassed validation; it reads as zero, which every caller treats
// as "no time".
func parseDuration(s string) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0
	}
	return d
}

// TimeoutDuration is spec.timeout.
func (s *CouchBenchmarkSpec) TimeoutDuration() time.Duration { return parseDuration(s.Timeout) }

// PodStartTimeoutDuration is spec.podStartTimeout.
func (s *CouchBenchmarkSpec) PodStartTimeoutDuration() time.Duration {
	return parseDuration(s.PodStartTimeout)
}

// ModeDuration is how long each write mode runs.
func (w *WritesWorkload) ModeDuration() time.Duration { return parseDuration(w.Duration) }

// RunDuration is the length of a time-bound read run; zero for the closed model.
func (r *ReadsWorkload) RunDuration() time.Duration { return parseDuration(r.Duration) }

// PauseDuration is the pause between read repetitions.
func (r *ReadsWorkload) PauseDuration() time.Duration { return parseDuration(r.Pause) }

// TimeLimitDuration is how long a step may add rounds.
func (s *SequentialRounds) TimeLimitDuration() time.Duration { return parseDuration(s.TimeLimit) }

package controllers

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/barrier"
	"github.com/couchbench/couchbench/internal/builders"
	"github.com/couchbench/couchbench/internal/dataset"
	"github.com/couchbench/couchbench/internal/k6plan"
	"github.com/couchbench/couchbench/internal/names"
	"github.com/couchbench/couchbench/internal/results"
	"github.com/couchbench/couchbench/internal/turns"
)

// runReads runs the read load of its arms: for each round, every arm in turn, in the round's
// random order (internal/turns, as the runner's steps: A B, then B A, ...), as
// spec.k6.parallelism k6 Jobs created together, each running its execution segment of the
// load, against the arm's first document profile's database; each run starts reads.pause
// after the one before ended.
// Whenever a run has ended, the summaries of all that have become the arms' reads in their
// results documents, so that a failure later keeps them.
func (r *CouchBenchmarkReconciler) runReads(ctx context.Context, bench *benchv1.CouchBenchmark, arms []benchv1.QueryServer) (stepOutcome, error) {
	n := int(bench.Spec.K6.Parallelism)
	reads := bench.Spec.Workloads.Reads
	ended := map[string][]jobSet{}
	var previous jobSet
	for rep := range readsRoundCount(bench) {
		for _, qs := range readsOrder(bench, arms, rep) {
			jobNames := make([]string, n)
			for i := range n {
				jobNames[i] = builders.K6JobName(bench, qs.Name, rep, i)
			}
			// A metered round's meter is the last Job of its set: a part of its barriers.
			if r.meteredRound(bench, rep) {
				jobNames = append(jobNames, builders.ReadsMeterJobName(bench, qs.Name, rep))
			}
			jobs, err := r.observeJobs(ctx, bench, jobNames)
			switch {
			case err != nil:
				return stepOutcome{}, err
			case jobs.missing() && previous != nil:
				if out, err := r.storeReads(ctx, bench, arms, ended); err != nil || out.failure != nil {
					return out, err
				}
				_, lastEnd := spansOf(previous)
				if wait := lastEnd.Add(reads.PauseDuration()).Sub(r.Clock.Now()); wait > 0 {
					return stepOutcome{requeueAfter: wait}, nil
				}
				return r.startReads(ctx, bench, qs, rep, n)
			case jobs.missing():
				return r.startReads(ctx, bench, qs, rep, n)
			}
			if out, waiting, err := r.meterAfterLoad(ctx, bench, jobs[:n], jobs[n:]); waiting || err != nil {
				return out, err
			}
			if out, running, err := r.running(ctx, bench, jobs, k6Pods(bench)); running || err != nil {
				return out, err
			}
			ended[qs.Name] = append(ended[qs.Name], jobs)
			previous = jobs
		}
	}
	if out, err := r.storeReads(ctx, bench, arms, ended); err != nil || out.failure != nil {
		return out, err
	}
	return stepOutcome{done: true}, nil
}

// meterAfterLoad ends a round's meter that still waits once all its k6 runners have ended
// without marking their ends (a teardown that could not write): after meterGrace its active
// deadline is cut to a second, so that the Job controller stops its pod, which hands over a
// reading that says why there is none. waiting: the step waits for it meanwhile.
func (r *CouchBenchmarkReconciler) meterAfterLoad(ctx context.Context, bench *benchv1.CouchBenchmark, k6, meter jobSet) (stepOutcome, bool, error) {
	if len(meter) == 0 || meter[0].phase != jobRunning || !k6.finished() {
		return stepOutcome{}, false, nil
	}
	m := meter[0]
	if stopping(m) {
		return stepOutcome{requeueAfter: recheckAfter}, true, nil
	}
	_, lastEnd := spansOf(k6)
	if wait := lastEnd.Add(meterGrace).Sub(r.Clock.Now()); wait > 0 {
		return stepOutcome{requeueAfter: wait}, true, nil
	}
	return stepOutcome{requeueAfter: recheckAfter}, true, r.endEarly(ctx, bench, m, fmt.Sprintf("the k6 runners of Job %s's round "+
		"ended over %s ago and it still waits for their ends; stopping it: the round keeps its load without a CPU reading", m.name, meterGrace))
}

// meterGrace is how long a round's meter may go on waiting once its k6 runners have ended:
// it sees their ends within a poll (readscpu.EndPoll) when they marked them.
const meterGrace = 30 * time.Second

// meteredRound says whether a meter reads the server's CPU time over round rep of the reads
// (internal/readscpu): every counted repetition when the operator reads CPU time; the warm-up
// is not counted, so not read.
func (r *CouchBenchmarkReconciler) meteredRound(bench *benchv1.CouchBenchmark, rep int) bool {
	warmUp := bench.Spec.Workloads.Reads.WarmUp && rep == 0
	return r.readsCPU(&bench.Spec) && !warmUp
}

// readsOrder is the arms' order in round rep of the reads (rep 0 is the warm-up when there is
// one), drawn as the runner draws its steps' (round 0 the warm-up, 1 the first repetition).
func readsOrder(bench *benchv1.CouchBenchmark, arms []benchv1.QueryServer, rep int) []benchv1.QueryServer {
	round := rep
	if !bench.Spec.Workloads.Reads.WarmUp {
		round++
	}
	armNames := make([]string, len(arms))
	for i, qs := range arms {
		armNames[i] = qs.Name
	}
	out := make([]benchv1.QueryServer, 0, len(arms))
	for _, name := range turns.Order(builders.RunID(bench), string(benchv1.StepReads), round, armNames) {
		out = append(out, arms[slices.Index(armNames, name)])
	}
	return out
}

// readsRoundCount is how many rounds the reads have: the repetitions, and the warm-up first
// (rep 0) when there is one.
func readsRoundCount(bench *benchv1.CouchBenchmark) int {
	reads := bench.Spec.Workloads.Reads
	if reads.WarmUp {
		return int(max(reads.Repetitions, 1)) + 1
	}
	return int(max(reads.Repetitions, 1))
}

// readsRounds is the arms' order in every round of the reads, for the step's record.
func readsRounds(bench *benchv1.CouchBenchmark, arms []benchv1.QueryServer) [][]string {
	if len(arms) < 2 {
		return nil
	}
	out := make([][]string, readsRoundCount(bench))
	for rep := range out {
		for _, qs := range readsOrder(bench, arms, rep) {
			out[rep] = append(out[rep], qs.Name)
		}
	}
	return out
}

// storeReads turns the k6 summaries of the runs that have ended into the arms' reads, stored
// together. A failed runner fails the step after the runs before its own are stored.
func (r *CouchBenchmarkReconciler) storeReads(ctx context.Context, bench *benchv1.CouchBenchmark, arms []benchv1.QueryServer,
	ended map[string][]jobSet) (stepOutcome, error) {
	doc := &results.Document{
		SchemaVersion: results.SchemaVersion, Benchmark: bench.Name, SpecHash: results.SpecHash(bench.Spec), Spec: bench.Spec,
		RunID: builders.RunID(bench), Seed: bench.Spec.Dataset.Seed,
	}
	var failure stepOutcome
	for _, qs := range arms {
		arm, record, out, err := r.armReads(ctx, bench, qs, ended[qs.Name])
		record.Rounds = readsRounds(bench, arms)
		if err != nil {
			return stepOutcome{}, err
		}
		if failure.failure == nil {
			failure = out
		}
		if arm == nil {
			continue
		}
		doc.Arms, doc.Steps = append(doc.Arms, *arm), append(doc.Steps, record)
		if doc.StartedAt.IsZero() || record.StartedAt.Before(doc.StartedAt) {
			doc.StartedAt = record.StartedAt
		}
		if record.FinishedAt.After(doc.FinishedAt) {
			doc.FinishedAt = record.FinishedAt
		}
	}
	if len(doc.Arms) > 0 {
		if err := r.storeStepDocument(ctx, bench, doc); err != nil {
			return stepOutcome{}, err
		}
	}
	return failure, nil
}

// armReads is one arm's reads from the k6 summaries of its runs that have ended, and its step
// record; nil when none has. A failed runner ends it at the run before its own.
func (r *CouchBenchmarkReconciler) armReads(ctx context.Context, bench *benchv1.CouchBenchmark, qs benchv1.QueryServer,
	ended []jobSet) (*results.Arm, results.StepRecord, stepOutcome, error) {
	record := results.StepRecord{QueryServer: qs.Name, Step: benchv1.StepReads}
	cfg, err := r.readsConfig(bench, qs)
	if err != nil {
		return nil, record, stepOutcome{}, err
	}
	n := int(bench.Spec.K6.Parallelism)
	segments, _ := k6plan.Segments(n)
	reads := &results.Reads{Scenario: cfg.Scenario}
	var all jobSet
	var failure stepOutcome
	warmUp := bench.Spec.Workloads.Reads.WarmUp
	for round, jobs := range ended {
		// With a warm-up, round 0 is it and repetition 0 is round 1.
		rep := round
		if warmUp {
			rep--
		}
		k6, meter := jobs[:n], jobs[n:]
		var runners []results.ReadsRunner
		for i, job := range k6 {
			if failure.failure == nil {
				if failure, err = r.readsRunner(ctx, qs, job, rep, i, n, k6plan.SegmentName(segments[i]), cfg.UserThresholds, &runners); err != nil {
					return nil, record, stepOutcome{}, err
				}
			}
		}
		if failure.failure != nil {
			// The runners wait for the meter at the start: a meter that failed (its pod lost,
			// say) stops them (stopParts), and is named beside them.
			if len(meter) > 0 && meter[0].phase == jobFailed {
				failure.failure.message += fmt.Sprintf("; the round's CPU meter, Job %s, failed: %s", meter[0].name, meter[0].detail)
			}
			break
		}
		if rep < 0 {
			reads.WarmUp = runners
		} else {
			reads.Runners = append(reads.Runners, runners...)
		}
		for _, job := range meter {
			cpu, err := r.readsMeter(ctx, job)
			if err != nil {
				return nil, record, stepOutcome{}, err
			}
			cpu.Repetition = rep
			reads.CPU = append(reads.CPU, cpu)
		}
		all = append(all, k6...)
	}
	if len(all) == 0 {
		return nil, record, failure, nil
	}
	record.StartedAt, record.FinishedAt = spansOf(all)
	profile := bench.Spec.Dataset.Profiles[0]
	arm := &results.Arm{QueryServer: qs.Name, Cluster: r.provenance(ctx, bench, qs.Name, benchv1.StepReads, results.RoleK6, all),
		Profiles: []results.Profile{{Profile: dataset.ProfileName(profile), DB: cfg.DB, Reads: reads}}}
	return arm, record, failure, nil
}

// readsRunner reads one k6 Job's summary into runners, or says why the step fails.
func (r *CouchBenchmarkReconciler) readsRunner(ctx context.Context, qs benchv1.QueryServer, job observedJob, rep, i, n int,
	segment string, thresholds []string, runners *[]results.ReadsRunner) (stepOutcome, error) {
	round := fmt.Sprintf("repetition %d", rep+1)
	if rep < 0 {
		round = "warm-up"
	}
	which := fmt.Sprintf("query server %s, reads, %s: k6 runner %d of %d", qs.Name, round, i+1, n)
	if job.phase == jobFailed {
		return failed(reasonStepFailed, "%s failed: %s", which, job.detail), nil
	}
	_, data, problem, err := r.payload(ctx, job, builders.K6Container)
	switch {
	case err != nil:
		return stepOutcome{}, err
	case problem != "":
		return failed(reasonStepFailed, "%s: %s", which, problem), nil
	}
	runner, err := results.ParseK6Summary(data, segment, thresholds)
	if err != nil {
		return failed(reasonStepFailed, "%s: %v", which, err), nil
	}
	runner.Repetition = max(rep, 0)
	*runners = append(*runners, runner)
	return stepOutcome{}, nil
}

// readsMeter is what a round's meter read, once its k6 runners have all succeeded. A meter
// that handed over no reading (stopped by meterAfterLoad, its reading interrupted; or failed)
// costs the round its reading, not its load: the error says why there is none.
func (r *CouchBenchmarkReconciler) readsMeter(ctx context.Context, job observedJob) (results.ReadsCPU, error) {
	_, data, problem, err := r.payload(ctx, job, builders.RunnerContainer)
	switch {
	case err != nil:
		return results.ReadsCPU{}, err
	case problem != "" && job.phase == jobFailed:
		return results.ReadsCPU{Error: fmt.Sprintf("the meter's Job %s failed: %s", job.name, job.detail)}, nil
	case problem != "":
		return results.ReadsCPU{Error: problem}, nil
	}
	var cpu results.ReadsCPU
	if err := json.Unmarshal(data, &cpu); err != nil {
		return results.ReadsCPU{Error: fmt.Sprintf("the meter's Job %s handed over no reading: %v", job.name, err)}, nil
	}
	return cpu, nil
}

// spansOf is when the Jobs ran, from the first start to the last completion.
func spansOf(jobs jobSet) (from, to time.Time) {
	for _, job := range jobs {
		from, to = spanOf(from, to, job)
	}
	return from, to
}

// spanOf widens [from, to] to the Job's run.
func spanOf(from, to time.Time, o observedJob) (time.Time, time.Time) {
	if s := o.job.Status.StartTime; s != nil && (from.IsZero() || s.Time.Before(from)) {
		from = s.Time
	}
	if c := o.job.Status.CompletionTime; c != nil && c.After(to) {
		to = c.Time
	}
	return from, to
}

// readsConfig is the k6 script's configuration for an arm: what its Jobs run and what their
// summaries are read against.
func (r *CouchBenchmarkReconciler) readsConfig(bench *benchv1.CouchBenchmark, qs benchv1.QueryServer) (k6plan.Config, error) {
	url, _ := r.target(bench, qs)
	db := names.Database(bench.Name, builders.RunID(bench), qs.Name, dataset.ProfileName(bench.Spec.Dataset.Profiles[0]))
	return k6plan.NewConfig(&bench.Spec, qs, url, db)
}

// startReads creates the script's ConfigMap (once) and every runner's Job of a repetition
// that does not exist yet, in one pass, so that the runners start together.
func (r *CouchBenchmarkReconciler) startReads(ctx context.Context, bench *benchv1.CouchBenchmark, qs benchv1.QueryServer,
	rep, n int) (stepOutcome, error) {
	if out, ok, err := r.createOwned(ctx, bench, builders.K6ConfigMap(bench, k6plan.ScriptName, k6plan.Script)); !ok {
		return out, err
	}
	cfg, err := r.readsConfig(bench, qs)
	if err != nil {
		return stepOutcome{}, err
	}
	config, err := cfg.JSON()
	if err != nil {
		return stepOutcome{}, err
	}
	url, creds := r.target(bench, qs)
	metered := r.meteredRound(bench, rep)
	segments, sequence := k6plan.Segments(n)
	jobs := make([]*batchv1.Job, 0, n+1)
	for i := range n {
		var start string
		switch {
		case metered:
			start = barrier.MeteredSpec(k6plan.BarrierName(rep), i, n)
		case n > 1:
			start = barrier.Spec(k6plan.BarrierName(rep), i, n)
		}
		jobs = append(jobs, builders.K6Job{
			Bench: bench, Arm: qs.Name, Repetition: rep, Index: i, Runners: n, Segment: segments[i], Sequence: sequence,
			Image:   cmp.Or(bench.Spec.K6.Image, r.K6Image),
			Barrier: start,
			Script:  k6plan.ScriptName, Config: config, Credentials: creds, Deadline: r.jobDeadline(bench),
		}.Job())
	}
	if metered {
		if err := r.ensureIdentity(ctx, bench.Namespace, r.cpuReader()); err != nil {
			return stepOutcome{}, err
		}
		server := builders.ArmServer{Arm: qs.Name, URL: url, Credentials: creds, Pods: builders.CouchDBPodNames(bench, qs.Name)}
		jobs = append(jobs, builders.ReadsMeterJob{Bench: bench, Server: server, Image: r.RunnerImage, Round: rep, Runners: n,
			Deadline: r.jobDeadline(bench)}.Job())
	}
	for _, job := range jobs {
		if out, ok, err := r.createOwned(ctx, bench, job); !ok {
			return out, err
		}
	}
	return stepOutcome{}, nil
}

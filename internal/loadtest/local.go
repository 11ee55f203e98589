// Package loadtest runs the k6 read load by hand (`couchbench run`), with k6 processes on
// this machine as the operator's Jobs run it: the script and configuration of
// internal/k6plan, its runners, barriers and rounds. The operator does not link it.
package loadtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/barrier"
	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/cpucost"
	"github.com/couchbench/couchbench/internal/k6plan"
	"github.com/couchbench/couchbench/internal/readscpu"
	"github.com/couchbench/couchbench/internal/results"
	"github.com/couchbench/couchbench/internal/retry"
	"github.com/couchbench/couchbench/internal/turns"
)

// Local runs a benchmark's read load by hand (`couchbench run`) as the operator's k6 Jobs
// run it: the same script and configuration, spec.k6.parallelism runners each with its
// execution segment, meeting at the same start barrier, the same rounds (a warm-up when
// asked, then every repetition, arms taking turns, reads.pause apart), and each runner's
// summary handed over the same way, a frame on its standard output checked by a handoff file,
// read by results.ParseK6Summary. Each runner is a k6 process on this machine instead of a
// Job.
type Local struct {
	K6    K6
	Bench *benchv1.CouchBenchmark
	// Target is an arm's CouchDB: its URL, without credentials (they go to k6 in its
	// environment, as the operator's Jobs pass them), and its admin's credentials.
	Target func(arm string) (url string, creds couch.Credentials)
	// Meters read the arms' servers' CPU time (by arm; none: not read), over each
	// repetition's load (internal/readscpu).
	Meters map[string]cpucost.Meter
	// Log receives progress lines.
	Log io.Writer
}

// K6 is a k6 binary.
type K6 struct {
	Path string
	// Version is the first line of its answer to `k6 version`.
	Version string
}

// FindK6 is the k6 binary at path, or k6 on PATH when path is "": one that answers
// `k6 version`.
func FindK6(path string) (K6, error) {
	if path == "" {
		var err error
		if path, err = exec.LookPath("k6"); err != nil {
			return K6{}, errors.New("there is no k6 on PATH")
		}
	}
	out, err := exec.Command(path, "version").Output()
	if err != nil {
		return K6{}, fmt.Errorf("%s does not run as k6 (k6 version: %w)", path, err)
	}
	version, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return K6{Path: path, Version: version}, nil
}

// exitThresholdsFailed is k6's exit code when a threshold failed: a result the tables report,
// not a failed runner (the operator's k6 Jobs turn it into success likewise).
const exitThresholdsFailed = 99

// Run runs the reads of the arms doc holds (what the runner's steps ran), each against its
// first document profile's database, and merges what they measured into doc (results.Merge),
// also when a runner fails or the run is interrupted: the runs that ended before are kept.
// An arm the runner stopped (its views ran on another runtime than it asked for) has no
// reads either.
func (l Local) Run(ctx context.Context, doc *results.Document) (err error) {
	spec := &l.Bench.Spec
	reads := spec.Workloads.Reads
	n := int(max(spec.K6.Parallelism, 1))
	dir, err := os.MkdirTemp("", "couchbench-k6-")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, os.RemoveAll(dir)) }()
	script := filepath.Join(dir, k6plan.ScriptName)
	if err := os.WriteFile(script, []byte(k6plan.Script), 0o600); err != nil {
		return err
	}
	var arms []*localArm
	for _, a := range doc.Arms {
		if a.Stopped() {
			continue
		}
		la, err := l.arm(a)
		if err != nil {
			return err
		}
		arms = append(arms, la)
	}
	var orders [][]string
	defer func() { mergeReads(doc, arms, orders, err) }()
	logf(l.Log, "reads with %s (%s), %d runner(s) a run", l.K6.Path, l.K6.Version, n)

	repetitions := int(max(reads.Repetitions, 1))
	rounds := repetitions
	if reads.WarmUp {
		rounds++ // round 0 is the warm-up
	}
	var lastEnd time.Time
	for round := range rounds {
		// With a warm-up, round 0 is it and repetition 0 is round 1.
		rep := round
		if reads.WarmUp {
			rep--
		}
		which := fmt.Sprintf("repetition %d of %d", rep+1, repetitions)
		if rep < 0 {
			which = "warm-up"
		}
		// The arms take turns in the round's random order, as the runner's steps and the
		// operator's k6 Jobs do (round 0 is the warm-up, 1 the first repetition).
		order := round
		if !reads.WarmUp {
			order++
		}
		turn := turns.Order(turns.Key(doc.RunID, doc.StartedAt), string(benchv1.StepReads), order, armNames(arms))
		orders = append(orders, turn)
		for _, a := range inTurn(arms, turn) {
			if !lastEnd.IsZero() {
				if err := retry.Sleep(ctx, time.Until(lastEnd.Add(reads.PauseDuration()))); err != nil {
					return err
				}
			}
			logf(l.Log, "%s: reads (k6, %s), %s", a.qs.Name, reads.Scenario, which)
			started := time.Now()
			// The warm-up is not counted, so its cost is not read.
			var meter cpucost.Meter
			if rep >= 0 {
				meter = l.Meters[a.qs.Name]
			}
			runners, cpu, err := l.run(ctx, a, dir, script, round, n, meter)
			lastEnd = time.Now()
			a.span(started, lastEnd)
			if err != nil {
				a.err = fmt.Errorf("query server %s, reads, %s: %w", a.qs.Name, which, err)
				return a.err
			}
			if meter != nil {
				cpu.Repetition = rep
				a.reads.CPU = append(a.reads.CPU, cpu)
			}
			var requests, failed int64
			var longest float64
			for i := range runners {
				runners[i].Repetition = max(rep, 0)
				requests, failed, longest = requests+runners[i].Requests, failed+runners[i].Failed, max(longest, runners[i].DurationMs)
			}
			if rep < 0 {
				a.reads.WarmUp = runners
			} else {
				a.reads.Runners = append(a.reads.Runners, runners...)
			}
			logf(l.Log, "%s: reads, %s: %d requests (%d failed) in %s%s", a.qs.Name, which, requests, failed,
				time.Duration(longest*float64(time.Millisecond)).Round(time.Millisecond), describeCPU(meter, cpu, requests))
		}
	}
	return nil
}

// localArm is one arm's reads under way.
type localArm struct {
	qs       benchv1.QueryServer
	profile  string
	config   k6plan.Config
	json     string
	creds    couch.Credentials
	reads    results.Reads
	from, to time.Time
	// err is why the arm's last run failed.
	err error
}

// arm readies an arm of the runner's document for its reads: its query server (preset
// applied) and the script's configuration for the database of its first profile.
func (l Local) arm(a results.Arm) (*localArm, error) {
	i := slices.IndexFunc(l.Bench.Spec.QueryServers, func(q benchv1.QueryServer) bool { return q.Name == a.QueryServer })
	if i < 0 || len(a.Profiles) == 0 {
		return nil, fmt.Errorf("query server %s is not in the benchmark, or has no database", a.QueryServer)
	}
	qs := l.Bench.Spec.QueryServers[i].Resolved()
	url, _ := l.Target(a.QueryServer)
	cfg, err := k6plan.NewConfig(&l.Bench.Spec, qs, url, a.Profiles[0].DB)
	if err != nil {
		return nil, err
	}
	data, err := cfg.JSON()
	if err != nil {
		return nil, err
	}
	_, creds := l.Target(a.QueryServer)
	return &localArm{qs: qs, profile: a.Profiles[0].Profile, config: cfg, json: data, creds: creds,
		reads: results.Reads{Scenario: cfg.Scenario}}, nil
}

// armNames are the arms' names, in order.
func armNames(arms []*localArm) []string {
	out := make([]string, len(arms))
	for i, a := range arms {
		out[i] = a.qs.Name
	}
	return out
}

// inTurn puts the arms in the order named.
func inTurn(arms []*localArm, order []string) []*localArm {
	out := make([]*localArm, len(order))
	for i, name := range order {
		out[i] = arms[slices.IndexFunc(arms, func(a *localArm) bool { return a.qs.Name == name })]
	}
	return out
}

// span widens the arm's step to a run from started to ended.
func (a *localArm) span(started, ended time.Time) {
	if a.from.IsZero() {
		a.from = started
	}
	a.to = ended
}

// mergeReads merges the arms' reads that ended into doc, with their step records (and the
// order the arms took their turns in, when there were several), as the operator stores a
// reads step; err is how the step ended.
func mergeReads(doc *results.Document, arms []*localArm, orders [][]string, err error) {
	step := &results.Document{}
	for _, a := range arms {
		if a.from.IsZero() {
			continue
		}
		rec := results.StepRecord{QueryServer: a.qs.Name, Step: benchv1.StepReads, StartedAt: a.from.UTC(), FinishedAt: a.to.UTC()}
		if len(arms) > 1 {
			rec.Rounds = orders
		}
		if a.err != nil {
			rec.Error = a.err.Error()
		}
		if step.StartedAt.IsZero() || rec.StartedAt.Before(step.StartedAt) {
			step.StartedAt = rec.StartedAt
		}
		if rec.FinishedAt.After(step.FinishedAt) {
			step.FinishedAt = rec.FinishedAt
		}
		step.Steps = append(step.Steps, rec)
		if len(a.reads.Runners) > 0 || len(a.reads.WarmUp) > 0 {
			reads := a.reads
			step.Arms = append(step.Arms, results.Arm{QueryServer: a.qs.Name,
				Profiles: []results.Profile{{Profile: a.profile, DB: a.config.DB, Reads: &reads}}})
		}
	}
	if err != nil {
		step.Error, step.Interrupted = err.Error(), errors.Is(err, context.Canceled)
	}
	if len(step.Steps) > 0 || err != nil {
		results.Merge(doc, step)
	}
}

// run runs one round of an arm's reads: n k6 processes started together, and with a meter
// the server's CPU time over their load. A runner that fails stops the others, which would
// otherwise wait for it at the start barrier; a meter that fails costs only its reading.
func (l Local) run(ctx context.Context, a *localArm, dir, script string, round, n int,
	meter cpucost.Meter) ([]results.ReadsRunner, results.ReadsCPU, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	segments, sequence := k6plan.Segments(n)
	runners := make([]results.ReadsRunner, n)
	name := k6plan.BarrierName(round)
	var cpu results.ReadsCPU
	meterDone := make(chan struct{})
	meterCtx, stopMeter := context.WithCancel(ctx)
	defer stopMeter()
	if meter != nil {
		go func() {
			defer close(meterDone)
			var spent cpucost.Spent
			c, err := couch.New(a.config.URL, a.creds, couch.Options{})
			if err == nil {
				spent, err = readscpu.Round{Client: c, DB: a.config.DB, Barrier: name, Runners: n, Start: maxLoad, End: maxLoad}.Measure(meterCtx, meter)
			}
			cpu = readscpu.Reading(spent, err)
		}()
	} else {
		close(meterDone)
	}
	var (
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
	)
	for i := range n {
		wg.Go(func() {
			var err error
			runners[i], err = l.runner(ctx, a, dir, script, name, i, n, segments[i], sequence, meter != nil)
			if err != nil {
				mu.Lock()
				if first == nil {
					first = fmt.Errorf("k6 runner %d of %d: %w", i+1, n, err)
				}
				mu.Unlock()
				cancel()
			}
		})
	}
	wg.Wait()
	// With every k6 process gone, a meter still waiting waits for ends none of them will
	// mark (a teardown that could not write); it gets a few of its polls more.
	select {
	case <-meterDone:
	case <-time.After(meterGrace):
		stopMeter()
		<-meterDone
	}
	return runners, cpu, first
}

// describeCPU is the progress line's CPU part.
func describeCPU(meter cpucost.Meter, cpu results.ReadsCPU, requests int64) string {
	switch {
	case meter == nil:
		return ""
	case cpu.Error != "":
		return ", server CPU not read: " + cpu.Error
	case requests <= 0:
		return fmt.Sprintf(", server CPU %.2f s", cpu.CPUSeconds)
	}
	return fmt.Sprintf(", server CPU %.2f s (%.3f s per 1,000 requests)", cpu.CPUSeconds, 1000*cpu.CPUSeconds/float64(requests))
}

// meterGrace is how long a round's meter may go on waiting for the runners' ends once every
// k6 process has exited.
const meterGrace = 10 * readscpu.EndPoll

// maxLoad bounds a meter's waits for the runners, at the start (after their setup, which
// builds views) and at their ends; the round's runners end them sooner (a failed runner
// cancels the round; their exits end the wait for ends, meterGrace after).
const maxLoad = 24 * time.Hour

// runner runs k6 runner i of n of a round, whose barrier is called name, and reads its
// summary; metered, the round's meter is one more part of its barrier.
func (l Local) runner(ctx context.Context, a *localArm, dir, script, name string, i, n int, segment, sequence string,
	metered bool) (results.ReadsRunner, error) {
	p := k6Process{
		bin: l.K6.Path, script: script, handoff: filepath.Join(dir, fmt.Sprintf("%s-%s-%d.handoff", a.qs.Name, name, i)),
		env: []string{"COUCHBENCH_CONFIG=" + a.json, "COUCHDB_USER=" + a.creds.Username, "COUCHDB_PASSWORD=" + a.creds.Password},
	}
	if n > 1 {
		p.args = []string{"--execution-segment", segment, "--execution-segment-sequence", sequence}
	}
	// The barrier of the operator's k6 Jobs: local documents in the read database.
	switch {
	case metered:
		p.env = append(p.env, "COUCHBENCH_BARRIER="+barrier.MeteredSpec(name, i, n))
	case n > 1:
		p.env = append(p.env, "COUCHBENCH_BARRIER="+barrier.Spec(name, i, n))
	}
	_, summary, err := p.run(ctx)
	if err != nil {
		return results.ReadsRunner{}, err
	}
	return results.ParseK6Summary(summary, k6plan.SegmentName(segment), a.config.UserThresholds)
}

// k6Process is one k6 runner as a k6 Job's container runs it: `k6 run --quiet --no-color
// [args] script`, with env added to this process's environment (the script's configuration,
// the credentials), handing its summary over in a frame on its standard output and the
// frame's check in the file handoff.
type k6Process struct {
	bin, script, handoff string
	env, args            []string
}

// run runs k6 and returns its exit code (0, or exitThresholdsFailed) and the summary it
// handed over, checked against its handoff. Another exit is an error that quotes what k6
// said last.
func (p k6Process) run(ctx context.Context) (code int, summary []byte, err error) {
	cmd := exec.CommandContext(ctx, p.bin, append(append([]string{"run", "--quiet", "--no-color"}, p.args...), p.script)...)
	cmd.Env = append(append(os.Environ(), p.env...), "COUCHBENCH_HANDOFF="+p.handoff,
		// k6 would report its use to Grafana from the machine that generates the load.
		"K6_NO_USAGE_REPORT=true")
	// Stopped, k6 ends its test and writes its summary, which is then not used: the load was
	// cut short.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = time.Minute
	var stdout bytes.Buffer
	stderr := &lastBytes{max: 4 << 10}
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return 0, nil, ctx.Err()
	case errors.As(err, &exit) && exit.ExitCode() == exitThresholdsFailed:
		code = exitThresholdsFailed
	case err != nil:
		return 0, nil, fmt.Errorf("%w; k6 said: %s", err, strings.TrimSpace(stderr.String()))
	}
	message, err := os.ReadFile(p.handoff)
	if err != nil {
		return code, nil, fmt.Errorf("k6 ended without its handoff: %w; k6 said: %s", err, strings.TrimSpace(stderr.String()))
	}
	h, err := results.ParseHandoff(string(message))
	if err != nil {
		return code, nil, err
	}
	if len(message) > results.MaxHandoffBytes {
		return code, nil, fmt.Errorf("k6's handoff takes %d bytes, more than the %d of a termination message", len(message), results.MaxHandoffBytes)
	}
	summary, err = results.ReadFrame(&stdout, h)
	return code, summary, err
}

// lastBytes keeps the last max bytes written to it: what k6 said last, for an error message.
type lastBytes struct {
	max int
	buf []byte
}

func (t *lastBytes) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = t.buf[over:]
	}
	return len(p), nil
}

func (t *lastBytes) String() string { return string(t.buf) }

func logf(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, "%s %s\n", time.Now().UTC().Format("15:04:05"), fmt.Sprintf(format, args...))
}

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/couchbench/couchbench/internal/cpucost"
	"github.com/couchbench/couchbench/internal/dataset"
	"github.com/couchbench/couchbench/internal/k6plan"
	"github.com/couchbench/couchbench/internal/names"
	"github.com/couchbench/couchbench/internal/readscpu"
	"github.com/couchbench/couchbench/internal/results"
)

// newReadsCPUCommand is the meter of one round of an arm's k6 reads, as the operator's Job runs
// it beside the round's k6 Jobs: one more part of the round's barriers (internal/readscpu).
// `couchbench run` meters its rounds itself.
func newReadsCPUCommand() *cobra.Command {
	var (
		o       stepOptions
		round   int
		runners int
		limit   time.Duration
	)
	cmd := &cobra.Command{
		Use:   "reads-cpu -f bench.yaml --arm ARM --arm-pods ARM=NAMESPACE/POD,... --run-id ID --round N --runners N",
		Short: "read what an arm's CouchDB spends on one round of the k6 reads, beside its k6 runners",
		Example: examples("couchbench reads-cpu -f bench.yaml --url http://couchdb:5984 --arm js --arm-pods js=bench/couchdb-0 " +
			"--run-id r1 --round 1 --runners 2"),
		Args:              noArgs,
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return readsCPU(o, round, runners, limit, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fs := cmd.Flags()
	o.serverFlags(fs)
	o.meterFlags(fs)
	fs.StringSliceVar(&o.arms, "arm", nil, "the query `server` whose round it is")
	fs.StringVar(&o.handoff, "handoff", "", "hand the reading to the operator: it to standard output, framed, "+
		"and its check to this `file` (a Job's /dev/termination-log)")
	fs.StringVar(&o.runID, "run-id", "", "`name` part of the run's databases, as its steps took it")
	fs.IntVar(&round, "round", 0, "the `round` of the reads whose barriers to take part in (0 is the warm-up when there is one)")
	fs.IntVar(&runners, "runners", 1, "how many k6 runners (`n`) share the round")
	fs.DurationVar(&limit, "limit", time.Hour, "how long to wait for the runners at the start (their setup builds views) "+
		"and for their ends (`duration`): longer than setup and load")
	return cmd
}

// readsCPU meters one round and hands over its reading; a reading that could not be taken
// is handed over with its error, which the operator records beside the round's load.
func readsCPU(o stepOptions, round, runners int, limit time.Duration, stdout, stderr io.Writer) error {
	if o.file == "" {
		return usageError{errors.New("-f bench.yaml is required")}
	}
	if len(o.arms) != 1 || runners < 1 {
		return usageError{errors.New("one --arm, and --runners 1 or more, are required")}
	}
	bench, err := readBench(o.file)
	if err != nil {
		return err
	}
	arm := o.arms[0]
	t, err := clients(o, bench, o.arms)
	if err != nil {
		return err
	}
	ctx, stop := interruptible(o.handoff != "")
	defer stop()
	if _, pid := o.armPIDs[arm]; !pid {
		if _, pods := o.armPods[arm]; !pods {
			return usageError{fmt.Errorf("--arm-pid %s=PID or --arm-pods %s=NAMESPACE/POD,... is required: the server to read", arm, arm)}
		}
	}
	db := names.Database(bench.Name, o.runID, arm, dataset.ProfileName(bench.Spec.Dataset.Profiles[0]))
	rd := readscpu.Round{Client: t.clientOf(arm), DB: db, Barrier: k6plan.BarrierName(round), Runners: runners,
		Start: limit, End: limit}
	meters, doneMeasuring, err := cpuMeters(ctx, o.armPIDs, o.armPods, bench)
	defer func() {
		if err := doneMeasuring(); err != nil {
			fmt.Fprintf(stderr, "couchbench: ending the CPU readings: %v\n", err)
		}
	}()
	var (
		spent      cpucost.Spent
		measureErr error
	)
	switch {
	case errors.As(err, new(usageError)):
		return err
	case err != nil:
		// The runners wait for the meter at the start: it lets them go, and the round keeps
		// its load without a reading.
		measureErr = errors.Join(fmt.Errorf("no meter: %w", err), rd.Skip(ctx))
	default:
		spent, measureErr = rd.Measure(ctx, meters[arm])
	}
	reading := readscpu.Reading(spent, measureErr)
	if measureErr != nil {
		fmt.Fprintf(stderr, "couchbench: %s, reads, round %d: %v\n", arm, round, measureErr)
	} else {
		fmt.Fprintf(stderr, "couchbench: %s, reads, round %d: server CPU %.3f s over %.1f s\n", arm, round, reading.CPUSeconds, reading.WallSeconds)
	}
	if o.handoff == "" {
		return errors.Join(measureErr, json.NewEncoder(stdout).Encode(reading))
	}
	data, err := json.Marshal(reading)
	if err != nil {
		return err
	}
	if err := results.WriteFrame(stdout, results.PayloadReadsCPU, data); err != nil {
		return err
	}
	// The reading's own error is in it: the Job succeeds, and the round keeps its load.
	h := results.NewHandoff(results.PayloadReadsCPU, data, nil, ctx.Err() != nil)
	return os.WriteFile(o.handoff, h.Marshal(), 0o644)
}

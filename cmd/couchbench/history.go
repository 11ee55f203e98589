package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"sort"

	"github.com/couchbench/couchbench/internal/changepoint"
	"github.com/couchbench/couchbench/internal/history"
	"github.com/couchbench/couchbench/internal/results"
)

// formatMarkdown is the tables' format of report, compare and history.
const formatMarkdown = "markdown"

// historyCommand is `couchbench history`: a series of runs of one spec, as a schedule keeps
// it, for runs outside Kubernetes.
var historyCommand = command{
	name: "history", summary: "a series of runs of one spec: how much they differ from run to run, and where a metric shifted",
	usage: "couchbench history [--format markdown|json] RESULTS...",
	examples: "couchbench history nightly-*.json\n" +
		"couchbench history --format json runs/*.json > history.json",
	flags: historyFlags,
}

// readRuns reads every argument as one run: its results documents (one with every arm, or
// one per arm as the operator stores them), named by the file, in the order they started.
func readRuns(args []string) (history.History, error) {
	type run struct {
		name string
		docs []*results.Document
	}
	var runs []run
	for _, path := range args {
		docs, err := readAll([]string{path})
		if err != nil {
			return history.History{}, err
		}
		if len(docs) == 0 {
			return history.History{}, fmt.Errorf("%s holds no results document", path)
		}
		runs = append(runs, run{filepath.Base(path), docs})
	}
	sort.SliceStable(runs, func(i, j int) bool { return results.StartedAt(runs[i].docs).Before(results.StartedAt(runs[j].docs)) })
	var h history.History
	for _, r := range runs {
		entry, better, err := history.RunOf(r.name, results.StartedAt(r.docs), r.docs)
		if err != nil {
			return history.History{}, fmt.Errorf("%s: %w", r.name, err)
		}
		h.Add(entry, better)
	}
	return h, nil
}

func historyFlags(fs *flag.FlagSet) func([]string, io.Writer, io.Writer) error {
	format := fs.String("format", formatMarkdown, "`format`: markdown or json")
	return func(args []string, stdout, _ io.Writer) error {
		if len(args) < 2 {
			return usageError{errors.New("name the RESULTS of two runs or more, one file (or -) per run")}
		}
		h, err := readRuns(args)
		if err != nil {
			return err
		}
		shifts := h.Shifts(changepoint.Options{})
		switch *format {
		case "json":
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(struct {
				history.History
				Shifts []history.Shift `json:"shifts"`
			}{h, shifts})
		case formatMarkdown:
			return results.WriteMarkdown(stdout, historyTables(h, shifts))
		}
		return usageError{fmt.Errorf("--format %q: want markdown or json", *format)}
	}
}

// historyTables are the history's metrics with their spread from run to run, and its shifts.
func historyTables(h history.History, shifts []history.Shift) []results.Table {
	first, last := h.Runs[0], h.Runs[len(h.Runs)-1]
	metrics := results.Table{
		Title: fmt.Sprintf("%d runs, %s (%s) to %s (%s)", len(h.Runs), first.Name, first.ScheduledAt.Format("2006-01-02 15:04"),
			last.Name, last.ScheduledAt.Format("2006-01-02 15:04")),
		Note: "Between runs: the coefficient of variation of a metric over the runs, which a verdict on two runs must allow " +
			"for (spec.baseline.betweenRunsPercent). Rows named arm:reference are an arm's ratio to the first arm, run by run.",
		Header: []string{"Metric", "Runs", "Between runs", "First", "Last", "Shifts"},
	}
	count := map[string]int{}
	for _, s := range shifts {
		count[s.Metric]++
	}
	for _, key := range h.Keys() {
		_, values := h.Series(key)
		cv, n := h.Spread(key)
		metrics.Rows = append(metrics.Rows, []string{key, fmt.Sprint(n), fmt.Sprintf("%.1f%%", cv),
			fmt.Sprintf("%.4g", values[0]), fmt.Sprintf("%.4g", values[len(values)-1]), fmt.Sprint(count[key])})
	}
	tables := make([]results.Table, 0, 2)
	tables = append(tables, metrics)
	t := results.Table{
		Title: "Shifts",
		Note: "A shift: the level of a metric changed and stayed so for at least 2 runs, found over the whole series " +
			"(binary segmentation, a permutation test of the t statistic at p ≤ 0.001), named by its first run.",
		Header: []string{"Metric", "From run", "Change", "Runs since", "Confidence", "Worse"},
	}
	for _, s := range shifts {
		t.Rows = append(t.Rows, []string{s.Metric, s.Run, fmt.Sprintf("%+.1f%%", s.ChangePercent), fmt.Sprint(s.Runs),
			fmt.Sprintf("%.2f%%", s.Confidence), fmt.Sprint(s.Worse)})
	}
	if len(t.Rows) == 0 {
		t.Rows = append(t.Rows, []string{"none", "-", "-", "-", "-", "-"})
	}
	return append(tables, t)
}

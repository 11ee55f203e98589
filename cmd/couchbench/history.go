package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"sort"

	"github.com/couchbench/couchbench/internal/history"
	htmlreport "github.com/couchbench/couchbench/internal/report"
	"github.com/couchbench/couchbench/internal/results"
)

// The output formats of report, compare and history.
const (
	formatMarkdown = "markdown"
	formatHTML     = "html"
)

// historyCommand is `couchbench history`: a series of runs of one spec, as a schedule keeps
// it, for runs outside Kubernetes.
var historyCommand = command{
	name: "history", summary: "a series of runs of one spec: how much they differ from run to run, and where a metric shifted",
	usage: "couchbench history [--format markdown|json|html] RESULTS...",
	examples: "couchbench history nightly-*.json\n" +
		"couchbench history --format html nightly-*.json > history.html\n" +
		"couchbench history --format json runs/*.json > history.json",
	flags: historyFlags,
}

// readRuns reads every argument as one run: its results documents (one with every arm, or
// one per arm as the operator stores them), named by the file, in the order they started;
// and the benchmark the newest run is of.
func readRuns(args []string) (history.History, string, error) {
	type run struct {
		name string
		docs []*results.Document
	}
	var runs []run
	for _, path := range args {
		docs, err := readAll([]string{path})
		if err != nil {
			return history.History{}, "", err
		}
		if len(docs) == 0 {
			return history.History{}, "", fmt.Errorf("%s holds no results document", path)
		}
		runs = append(runs, run{filepath.Base(path), docs})
	}
	sort.SliceStable(runs, func(i, j int) bool { return results.StartedAt(runs[i].docs).Before(results.StartedAt(runs[j].docs)) })
	var h history.History
	for _, r := range runs {
		entry, better, err := history.RunOf(r.name, results.StartedAt(r.docs), r.docs)
		if err != nil {
			return history.History{}, "", fmt.Errorf("%s: %w", r.name, err)
		}
		h.Add(entry, better)
	}
	return h, runs[len(runs)-1].docs[0].Benchmark, nil
}

func historyFlags(fs *flag.FlagSet) func([]string, io.Writer, io.Writer) error {
	format := fs.String("format", formatMarkdown, "`format`: markdown, json, or html (every metric's trend, its shifts marked, and the tables)")
	return func(args []string, stdout, _ io.Writer) error {
		if len(args) < 2 {
			return usageError{errors.New("name the RESULTS of two runs or more, one file (or -) per run")}
		}
		h, benchmark, err := readRuns(args)
		if err != nil {
			return err
		}
		shifts := h.Shifts()
		switch *format {
		case "json":
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			judged := h.Detections()
			return enc.Encode(struct {
				history.History
				Shifts            []history.Shift     `json:"shifts"`
				FalseAlarmsPerRun string              `json:"falseAlarmsPerRun"`
				Detection         []history.Detection `json:"detection"`
			}{h, shifts, history.Budget(len(judged)), judged})
		case formatMarkdown:
			return results.WriteMarkdown(stdout, h.Tables(shifts))
		case formatHTML:
			return htmlreport.HistoryHTML(stdout, benchmark, h, shifts)
		}
		return usageError{fmt.Errorf("--format %q: want markdown, json or html", *format)}
	}
}

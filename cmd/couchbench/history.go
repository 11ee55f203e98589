package main

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"sort"

	"github.com/spf13/cobra"

	"github.com/couchbench/couchbench/internal/history"
	htmlreport "github.com/couchbench/couchbench/internal/report"
	"github.com/couchbench/couchbench/internal/results"
)

// newHistoryCommand is `couchbench history`: a series of runs of one spec, as a schedule
// keeps it, for runs outside Kubernetes.
func newHistoryCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "history [flags] RESULTS...",
		Short: "a series of runs of one spec: how much they differ from run to run, and where a metric shifted",
		Example: examples("couchbench history nightly-*.json",
			"couchbench history --format html nightly-*.json > history.html",
			"couchbench history --format json runs/*.json > history.json"),
		Args: atLeastArgs(2, "name the RESULTS of two runs or more, one file (or -) per run"),
	}
	format := formatFlag(cmd, "how to render the history; html draws every metric's trend with its shifts marked, then the tables",
		formatMarkdown, formatJSON, formatHTML)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		h, benchmark, err := readRuns(args, cmd.InOrStdin())
		if err != nil {
			return err
		}
		return writeHistory(cmd.OutOrStdout(), format.value, h, benchmark)
	}
	return cmd
}

func writeHistory(w io.Writer, format string, h history.History, benchmark string) error {
	shifts := h.Shifts()
	switch format {
	case formatJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		judged := h.Detections()
		return enc.Encode(struct {
			history.History
			Shifts            []history.Shift     `json:"shifts"`
			FalseAlarmsPerRun string              `json:"falseAlarmsPerRun"`
			Detection         []history.Detection `json:"detection"`
		}{h, shifts, history.Budget(len(judged)), judged})
	case formatHTML:
		return htmlreport.HistoryHTML(w, benchmark, h, shifts)
	}
	return results.WriteMarkdown(w, h.Tables(shifts))
}

// readRuns reads every argument as one run: its results documents (one with every arm, or
// one per arm as the operator stores them), named by the file, in the order they started;
// and the benchmark the newest run is of.
func readRuns(args []string, stdin io.Reader) (history.History, string, error) {
	type run struct {
		name string
		docs []*results.Document
	}
	var runs []run
	for _, path := range args {
		docs, err := readAll([]string{path}, stdin)
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

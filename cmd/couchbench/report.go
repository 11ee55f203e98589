package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/couchbench/couchbench/internal/compare"
	htmlreport "github.com/couchbench/couchbench/internal/report"
	"github.com/couchbench/couchbench/internal/results"
)

func newReportCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "report [flags] RESULTS...",
		Short: "render results documents as tables (Markdown, CSV) or one HTML page with charts",
		Example: examples("couchbench report results.json",
			"couchbench report --format html results.json > report.html",
			"couchbench report monday.json tuesday.json   # each run on its own, labelled with its benchmark, run id and start",
			"kubectl get cm -l bench.couchbench.io/results-of=NAME -o yaml | couchbench report -   # or -o json"),
		Args: atLeastArgs(1, "name at least one RESULTS file, or - for standard input"),
	}
	format := formatFlag(cmd, "how to render them; html is one page with charts", formatMarkdown, formatCSV, formatHTML)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		docs, err := readAll(args, cmd.InOrStdin())
		if err != nil {
			return err
		}
		return report(cmd.OutOrStdout(), format.value, docs)
	}
	return cmd
}

// report renders the documents run by run (results.Runs: the operator stores one document
// per arm, and those are one run), each labelled with its benchmark, run id and start.
func report(w io.Writer, format string, docs []*results.Document) error {
	runs := results.Runs(docs)
	switch format {
	case formatHTML:
		return htmlreport.HTMLRuns(w, runs)
	case formatCSV:
		reports := make([]results.Report, len(runs))
		for i, run := range runs {
			reports[i] = results.NewReport(run...)
		}
		return results.WriteCSV(w, reports)
	}
	for i, run := range runs {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if err := compare.WriteRun(w, run); err != nil {
			return err
		}
	}
	return nil
}

// readAll reads every RESULTS argument, "-" from stdin.
func readAll(args []string, stdin io.Reader) ([]*results.Document, error) {
	var docs []*results.Document
	for _, path := range args {
		more, err := results.ReadFile(path, stdin)
		if err != nil {
			return nil, err
		}
		docs = append(docs, more...)
	}
	return docs, nil
}

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/couchbench/couchbench/internal/compare"
	"github.com/couchbench/couchbench/internal/results"
)

func newCompareCommand() *cobra.Command {
	var opts compare.Options
	var failOnRegression bool
	cmd := &cobra.Command{
		Use:   "compare [flags] [EARLIER...] BASELINE CURRENT",
		Short: "compare a run with a baseline run: a noise-aware verdict per headline metric",
		Example: examples("couchbench compare yesterday.json today.json",
			"couchbench compare runs/day-0*.json yesterday.json today.json   # earlier runs: how much runs differ",
			"couchbench compare --fail-on-regression --tolerance 10 base.json new.json   # in CI: exit 1 when a metric regressed"),
		Args: atLeastArgs(2, "name the BASELINE and the CURRENT results, after any EARLIER runs"),
	}
	fs := cmd.Flags()
	fs.Float64Var(&opts.TolerancePercent, "tolerance", 5, "a change smaller than this `percent` is never a regression")
	fs.Float64Var(&opts.BetweenRunsPercent, "between-runs", compare.DefaultBetweenRunsPercent,
		"how much runs minutes apart differ (CV, `percent`) with nothing changed, assumed unless 3 EARLIER runs show it "+
			"(0: the runs' own repetitions alone)")
	format := formatFlag(cmd, "how to render the comparison", formatMarkdown, formatJSON)
	fs.BoolVar(&failOnRegression, "fail-on-regression", false, "exit 1 when a metric regressed (for CI)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		c, err := compareRuns(args, cmd.InOrStdin(), opts)
		if err != nil {
			return err
		}
		if err := writeComparison(cmd.OutOrStdout(), format.value, c); err != nil {
			return err
		}
		if failOnRegression && c.Verdict == compare.Regressed {
			return errors.New("regressed: " + c.Summary())
		}
		return nil
	}
	return cmd
}

// compareRuns compares the last of args (CURRENT) with the one before (BASELINE), the runs
// before that (EARLIER) telling how much runs differ.
func compareRuns(args []string, stdin io.Reader, opts compare.Options) (compare.Comparison, error) {
	n := len(args)
	base, err := readAll(args[n-2:n-1], stdin)
	if err != nil {
		return compare.Comparison{}, err
	}
	current, err := readAll(args[n-1:], stdin)
	if err != nil {
		return compare.Comparison{}, err
	}
	if n > 2 {
		h, _, err := readRuns(args[:n-1], stdin)
		if err != nil {
			return compare.Comparison{}, err
		}
		opts.History = h.Before(results.StartedAt(current))
	}
	c, err := compare.Compare(base, current, opts)
	if err != nil {
		return compare.Comparison{}, usageError{err}
	}
	return c, nil
}

func writeComparison(w io.Writer, format string, c compare.Comparison) error {
	if format == formatJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(c)
	}
	fmt.Fprintf(w, "## %s against %s: %s\n\n%s\n\n", c.Current, c.Baseline, c.Verdict, c.Summary())
	return results.WriteMarkdown(w, c.Tables())
}

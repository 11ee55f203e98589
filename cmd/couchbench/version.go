package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/version"
)

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:                   "version",
		Short:                 "this build's version, commit and Go release, and the CouchDB client's defaults",
		Example:               examples("couchbench version", "couchbench --version"),
		Args:                  noArgs,
		ValidArgsFunction:     cobra.NoFileCompletions,
		DisableFlagsInUseLine: true,
		RunE:                  func(cmd *cobra.Command, _ []string) error { return printVersion(cmd.OutOrStdout()) },
	}
}

// printVersion says which build this is and how it talks to CouchDB.
func printVersion(w io.Writer) error {
	b := version.Read()
	v, commit := b.Version, b.Commit
	if v == "" {
		v = "(version unknown: built without one)"
	}
	if commit == "" {
		commit = "unknown"
	}
	if b.Modified {
		commit += " (with changes not committed)"
	}
	fmt.Fprintf(w, "couchbench %s\n", v)
	if err := writeColumns(w, [][2]string{{"commit", commit}, {"go", b.Go}}); err != nil {
		return err
	}
	fmt.Fprint(w, "\nCouchDB client (run and the steps):\n")
	return writeColumns(w, [][2]string{
		{"connections", fmt.Sprintf("the most requests a step has under way at once, plus 2; at least %d", couch.MinConns)},
		{"request timeout", "none: a view build's request may take minutes (Ctrl-C or SIGTERM ends a run, keeping its results)"},
		{"connect timeout", couch.DialTimeout.String()},
		{"keep-alive", fmt.Sprintf("%s; an idle connection is closed after %s", couch.KeepAlive, couch.IdleConnTimeout)},
		{"compression", "off: decompressing answers would take the load generator's CPU"},
		{"retries", "none by the client; seeding retries a failed batch (its ids are fixed, so that is safe)"},
		{"proxy", "HTTP_PROXY, HTTPS_PROXY and NO_PROXY from the environment"},
		{"credentials", "COUCHDB_USER and COUCHDB_PASSWORD, or --credentials-dir DIR; never in the URL"},
	})
}

// writeColumns writes rows of two columns, indented, the second aligned after the widest
// first.
func writeColumns(w io.Writer, rows [][2]string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintf(tw, "  %s\t%s\n", r[0], r[1])
	}
	return tw.Flush()
}

// Command couchbench runs the workloads of a CouchBenchmark against a CouchDB (the reads
// with k6) and prints the results; it also renders and compares results documents. The
// operator's Jobs run its step subcommands; a user can run it by hand against any CouchDB:
//
//	COUCHDB_USER=admin COUCHDB_PASSWORD=... couchbench run -f bench.yaml --url http://localhost:5984
//
// Credentials come from the environment (COUCHDB_USER, COUCHDB_PASSWORD) or from a
// directory holding files "username" and "password" (a mounted Secret), never from a flag or
// the URL, which would show in process lists.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
)

func main() {
	os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr))
}

// realMain runs the command that args name, its results on stdout and its progress and
// errors on stderr, and returns its exit status: 1 when it failed, 2 when it was called
// wrongly (its usage then follows the error).
func realMain(args []string, stdout, stderr io.Writer) int {
	root := newRootCommand()
	root.SetArgs(append([]string{}, args...)) // never nil: cobra would read os.Args
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteC()
	if err == nil {
		return 0
	}
	fmt.Fprintf(stderr, "%s: %s\n", cmd.CommandPath(), strings.TrimRight(err.Error(), "\n"))
	// What couchbench itself refuses is a usage error too: cobra's unknown command.
	if !errors.As(err, new(usageError)) && cmd.HasParent() {
		return 1
	}
	fmt.Fprintf(stderr, "\n%s", cmd.UsageString())
	return 2
}

func init() {
	// The commands in the order a user meets them, as the README tells them.
	cobra.EnableCommandSorting = false
}

func newRootCommand() *cobra.Command {
	var showVersion bool
	root := &cobra.Command{
		Use: "couchbench COMMAND [flags] [arguments]",
		Long: `couchbench runs CouchDB benchmarks described by a CouchBenchmark (bench.yaml), and renders
and compares their results. RESULTS are results documents (the --out of a run, gzip-compressed
or not) or ConfigMaps holding them as kubectl prints them; "-" reads standard input.

Credentials (run and the steps): COUCHDB_USER and COUCHDB_PASSWORD, or --credentials-dir DIR
with files "username" and "password"; never in the URL.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if showVersion {
				return printVersion(cmd.OutOrStdout())
			}
			return usageError{errors.New("name a command")}
		},
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.Flags().BoolVar(&showVersion, "version", false, "the same as couchbench version")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.SetHelpTemplate(helpTemplate)
	root.SetUsageTemplate(usageTemplate)
	root.AddCommand(newRunCommand())
	root.AddCommand(newStepCommands()...)
	root.AddCommand(newReadsCPUCommand())
	root.AddCommand(newCleanCommand(), newClusterCommand(), newReportCommand(), newCompareCommand(), newHistoryCommand(), newVersionCommand())
	for _, c := range root.Commands() {
		c.Flags().SortFlags = false // as each command defines them: the benchmark and its server first
	}
	return root
}

const helpTemplate = `{{with .Long}}{{. | trimTrailingWhitespaces}}{{else}}{{.CommandPath}}: {{.Short}}{{end}}

{{.UsageString}}`

// usageTemplate is cobra's, with commands and flags before the examples.
const usageTemplate = `Usage:
  {{.UseLine}}{{if .HasAvailableSubCommands}}

Commands:{{range .Commands}}{{if or .IsAvailableCommand (eq .Name "help")}}
  {{rpad .Name .NamePadding}}  {{.Short}}{{end}}{{end}}{{end}}{{if .HasAvailableLocalFlags}}

Flags:
{{.LocalFlags.FlagUsages | trimTrailingWhitespaces}}{{end}}{{if .HasExample}}

Examples:
{{.Example}}{{end}}{{if .HasAvailableSubCommands}}

` + "`{{.CommandPath}} COMMAND --help`" + ` says more about each.{{end}}
`

// usageError is a command called wrongly: exit status 2, and its usage.
type usageError struct{ error }

func noArgs(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageError{fmt.Errorf("unexpected argument %q", args[0])}
	}
	return nil
}

// atLeastArgs wants n arguments or more, and says what they are when there are fewer.
func atLeastArgs(n int, what string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) < n {
			return usageError{errors.New(what)}
		}
		return nil
	}
}

// examples are a command's examples, one a line, indented as its flags.
func examples(lines ...string) string {
	return "  " + strings.Join(lines, "\n  ")
}

// format is a --format: one of its choices, the first by default.
type format struct {
	value   string
	choices []string
}

// formatFlag adds --format to cmd, one of choices (the first by default), which the shell
// completes.
func formatFlag(cmd *cobra.Command, usage string, choices ...string) *format {
	f := &format{choices[0], choices}
	cmd.Flags().Var(f, "format", usage)
	cobra.CheckErr(cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions(choices, cobra.ShellCompDirectiveNoFileComp)))
	return f
}

func (f *format) String() string { return f.value }

// Type is what help shows after --format: every choice.
func (f *format) Type() string { return strings.Join(f.choices, "|") }

func (f *format) Set(v string) error {
	if !slices.Contains(f.choices, v) {
		last := len(f.choices) - 1
		return fmt.Errorf("want %s or %s", strings.Join(f.choices[:last], ", "), f.choices[last])
	}
	f.value = v
	return nil
}

// The output formats of report, compare and history.
const (
	formatMarkdown = "markdown"
	formatCSV      = "csv"
	formatJSON     = "json"
	formatHTML     = "html"
)

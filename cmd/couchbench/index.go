package main

import (
	"github.com/spf13/cobra"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
)

func newIndexCommand() *cobra.Command {
	return stepCommand("index", []benchv1.Step{benchv1.StepIndex}, "time the view builds (after seed)",
		"couchbench index -f bench.yaml --url http://localhost:5984 --run-id r1 --arm js")
}

package main

import (
	"github.com/spf13/cobra"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
)

func newWritesCommand() *cobra.Command {
	return stepCommand("writes", []benchv1.Step{benchv1.StepWrites}, "time the insert modes",
		"couchbench writes -f bench.yaml --url http://localhost:5984")
}

package main

import (
	"github.com/spf13/cobra"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
)

func newViewsCommand() *cobra.Command {
	return stepCommand("views", []benchv1.Step{benchv1.StepViews}, "time full view reads (after seed)",
		"couchbench views -f bench.yaml --url http://localhost:5984 --run-id r1")
}

package main

import (
	"github.com/spf13/cobra"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
)

func newSeedCommand() *cobra.Command {
	return stepCommand("seed", []benchv1.Step{benchv1.StepSeed}, "load the dataset (one database per query server and profile)",
		"couchbench seed -f bench.yaml --url http://localhost:5984 --run-id r1")
}

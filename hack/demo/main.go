// Command demo applies a CouchBenchmark file, waits until the run has finished, and prints
// its results table from the results ConfigMap: the end of `make demo`, without needing
// kubectl. It uses the current kubeconfig context.
//
//	go run ./hack/demo config/samples/bench.yaml
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/builders"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: go run ./hack/demo BENCH.yaml")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var bench benchv1.CouchBenchmark
	if err := yaml.UnmarshalStrict(data, &bench); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if bench.Namespace == "" {
		bench.Namespace = "default"
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(benchv1.AddToScheme(scheme))
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	ctx := context.Background()

	// A benchmark is the record of one run: replace an earlier one of the same name.
	if err := c.Delete(ctx, bench.DeepCopy()); err == nil {
		fmt.Printf("deleting the earlier %s\n", bench.Name)
		for c.Get(ctx, client.ObjectKeyFromObject(&bench), &benchv1.CouchBenchmark{}) == nil {
			time.Sleep(2 * time.Second)
		}
	} else if !apierrors.IsNotFound(err) {
		return err
	}
	if err := c.Create(ctx, &bench); err != nil {
		return err
	}
	fmt.Printf("created couchbenchmark %s/%s\n", bench.Namespace, bench.Name)

	last := ""
	deadline := time.Now().Add(45 * time.Minute)
	for time.Now().Before(deadline) {
		var got benchv1.CouchBenchmark
		if err := c.Get(ctx, client.ObjectKeyFromObject(&bench), &got); err != nil {
			return err
		}
		st := got.Status
		line := string(st.Phase)
		if p := st.Progress; p != nil {
			// The step's own progress line changes while a step runs (documents seeded, a
			// build's share done, k6's progress), so a long step is not a silent one.
			line = fmt.Sprintf("%s: query server %s, %s (%d%%)", st.Phase, p.QueryServer, p.Step, p.Percent)
			if p.Message != "" {
				line += ": " + p.Message
			}
		}
		if line != last {
			fmt.Printf("%s %s\n", time.Now().Format("15:04:05"), line)
			last = line
		}
		switch st.Phase {
		case benchv1.PhaseSucceeded:
			var cm corev1.ConfigMap
			if err := c.Get(ctx, client.ObjectKey{Namespace: got.Namespace, Name: st.ResultsConfigMap}, &cm); err != nil {
				return err
			}
			fmt.Println()
			fmt.Print(cm.Data[builders.ResultsMarkdownKey])
			return nil
		case benchv1.PhaseFailed:
			for _, cond := range st.Conditions {
				fmt.Printf("  %s=%s %s: %s\n", cond.Type, cond.Status, cond.Reason, cond.Message)
			}
			return fmt.Errorf("the benchmark failed")
		}
		time.Sleep(3 * time.Second)
	}
	return fmt.Errorf("the benchmark did not finish in 45 minutes")
}

package controllers

import (
	"context"
	"errors"
	"strings"
	"time"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/builders"
	"github.com/couchbench/couchbench/internal/helmrelease"
)

// provision installs the arm's CouchDB with the Helm chart: first the admin Secret the
// chart reads (made once; the chart would otherwise make a new password on every render),
// then the release. Install is idempotent, so a restarted manager finds the release and
// moves on.
func (r *CouchBenchmarkReconciler) provision(ctx context.Context, bench *benchv1.CouchBenchmark, qs benchv1.QueryServer) (stepOutcome, error) {
	if out, late := r.pastClusterTimeout(bench, "provisioning"); late {
		return out, nil
	}
	secret, err := builders.AdminSecret(bench, qs.Name, builders.Random)
	if err != nil {
		return stepOutcome{}, err
	}
	if out, ok, err := r.createOwned(ctx, bench, secret); !ok {
		return out, err
	}
	values, err := builders.HelmValues(bench, qs)
	if err != nil {
		return failed(reasonChartFailed, "Helm values for query server %s: %v", qs.Name, err), nil
	}
	ref := chartRef(bench.Spec.CouchDB.Provision.Chart)
	release := builders.ReleaseName(bench, qs.Name)
	st, err := r.Releases.Install(ctx, bench.Namespace, release, ref, values, builders.Labels(bench, qs.Name, ""))
	if err != nil && !errors.Is(err, helmrelease.ErrReleaseFailed) {
		return failed(reasonChartFailed, "installing chart %s as release %s: %v", ref, release, err), nil
	}
	switch {
	case st.State == helmrelease.Deployed:
		return stepOutcome{done: true}, nil
	case st.State == helmrelease.Pending, strings.Contains(st.Description, "context canceled"):
		// Install runs to its end inside a reconcile, so a release still pending, or one that
		// failed because its install was cut short, was left by a manager that stopped
		// mid-install. It is this benchmark's: remove it and install again.
		if err := r.Releases.Uninstall(ctx, bench.Namespace, release); err != nil {
			return stepOutcome{}, err
		}
		return stepOutcome{requeueAfter: time.Second}, nil
	default:
		return failed(reasonChartFailed, "release %s is %s: %s", release, st.State, st.Description), nil
	}
}

// chartRef is the chart a spec names; the API server defaults it to the Apache chart.
func chartRef(c *benchv1.ChartSource) helmrelease.ChartRef {
	if c == nil {
		return helmrelease.ChartRef{}
	}
	return helmrelease.ChartRef{Repository: c.Repository, Name: c.Name, Version: c.Version, Path: c.Path}
}

// Package builders makes the objects a CouchBenchmark owns — the runner Jobs, the admin
// Secret and Helm values of a provisioned CouchDB, the spec and results ConfigMaps — as
// pure functions of the benchmark, so that each can be tested alone and the controller only
// decides when to create them.
package builders

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
)

// Name limits: object names that become label values must fit 63 characters; Helm release
// names must fit 53.
const (
	maxObjectName  = 63
	maxReleaseName = 53
)

// name joins parts with "-"; a name longer than limit keeps its start and ends in a hash
// of the whole, so that names stay unique and deterministic.
func name(limit int, parts ...string) string {
	n := strings.Join(parts, "-")
	if len(n) <= limit {
		return n
	}
	sum := sha256.Sum256([]byte(n))
	suffix := hex.EncodeToString(sum[:])[:8]
	return strings.TrimRight(n[:limit-len(suffix)-1], "-.") + "-" + suffix
}

// ReleaseName is the Helm release of one arm.
func ReleaseName(bench *benchv1.CouchBenchmark, arm string) string {
	return name(maxReleaseName, bench.Name, arm)
}

// ServiceName is the client Service the Apache chart makes for a release
// ("<release>-svc-couchdb", cut to 63 characters as the chart does).
func ServiceName(release string) string {
	return strings.TrimSuffix(truncate(release+"-svc-couchdb", maxObjectName), "-")
}

// CouchDBPodLabels select what the Apache chart makes for a release: its pods,
// StatefulSet and PersistentVolumeClaims.
func CouchDBPodLabels(release string) map[string]string {
	return map[string]string{chartAppLabel: chartApp, chartReleaseLabel: release}
}

// The labels the Apache chart puts on CouchDB pods: the app, and the release.
const (
	chartAppLabel, chartApp = "app", "couchdb"
	chartReleaseLabel       = "release"
)

// StatefulSetName is the chart's StatefulSet ("<release>-couchdb", cut to 63).
func StatefulSetName(release string) string {
	return strings.TrimSuffix(truncate(release+"-couchdb", maxObjectName), "-")
}

// CouchDBPodNames are the pods of an arm's CouchDB: a provisioned arm's StatefulSet's, one
// per node (a StatefulSet names its pods by ordinal), or the existing CouchDB's that the spec
// names, which every arm shares.
func CouchDBPodNames(bench *benchv1.CouchBenchmark, arm string) []string {
	if e := bench.Spec.CouchDB.Existing; e != nil {
		return slices.Clone(e.CPUPods)
	}
	sts := StatefulSetName(ReleaseName(bench, arm))
	pods := make([]string, bench.Spec.CouchDB.Provision.ClusterSize)
	for i := range pods {
		pods[i] = sts + "-" + strconv.Itoa(i)
	}
	return pods
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// AdminSecretName is the Secret with a provisioned arm's admin credentials.
func AdminSecretName(bench *benchv1.CouchBenchmark, arm string) string {
	return name(maxObjectName, bench.Name, arm, "admin")
}

// JobName is the runner Job of one step of its arms: one arm, or every arm of a benchmark whose
// arms share one CouchDB and take turns ("<benchmark>-<arm>-<arm>-<step>").
func JobName(bench *benchv1.CouchBenchmark, arms []string, step benchv1.Step) string {
	return name(maxObjectName, bench.Name, strings.Join(arms, "-"), string(step))
}

// RunnerParts is how many runner Jobs share a step: spec.runner.parallelism for the seed
// and writes steps, one for the others.
func RunnerParts(bench *benchv1.CouchBenchmark, step benchv1.Step) int {
	if benchv1.Shareable(step) {
		return max(int(bench.Spec.Runner.Parallelism), 1)
	}
	return 1
}

// JobNames are the runner Jobs of one step of its arms, by part: JobName, or with parts
// JobName followed by "-<part>".
func JobNames(bench *benchv1.CouchBenchmark, arms []string, step benchv1.Step) []string {
	parts := RunnerParts(bench, step)
	if parts == 1 {
		return []string{JobName(bench, arms, step)}
	}
	out := make([]string, parts)
	for i := range out {
		out[i] = name(maxObjectName, bench.Name, strings.Join(arms, "-"), string(step), strconv.Itoa(i))
	}
	return out
}

// SpecConfigMapName holds the benchmark as the runner reads it.
func SpecConfigMapName(bench *benchv1.CouchBenchmark) string {
	return name(maxObjectName, bench.Name, "spec")
}

// ResultsConfigMapName holds the results: "<benchmark>-results".
func ResultsConfigMapName(bench *benchv1.CouchBenchmark) string {
	return name(maxObjectName, bench.Name, "results")
}

// Labels on every object a benchmark makes.
const (
	LabelBenchmark   = "bench.couchbench.io/benchmark"
	LabelQueryServer = "bench.couchbench.io/query-server"
	LabelStep        = "bench.couchbench.io/step"
	// LabelPart is the part of a runner Job among the Jobs that share a step.
	LabelPart = "bench.couchbench.io/part"
	// LabelManagedBy is ManagedBy on every object a benchmark makes: the manager caches
	// only such Jobs and ConfigMaps.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedBy      = "couchbench"
)

// LabelValue is an object's name as a label value: a name longer than 63 characters is cut
// and ends in a hash, like the object names.
func LabelValue(objectName string) string { return name(maxObjectName, objectName) }

// Labels for an object of a benchmark, optionally of one arm and step. An object of several
// arms (a runner Job in which they take turns) has no query-server label.
func Labels(bench *benchv1.CouchBenchmark, arm string, step benchv1.Step) map[string]string {
	l := map[string]string{LabelBenchmark: LabelValue(bench.Name), LabelManagedBy: ManagedBy}
	if arm != "" {
		l[LabelQueryServer] = arm
	}
	if step != "" {
		l[LabelStep] = string(step)
	}
	return l
}

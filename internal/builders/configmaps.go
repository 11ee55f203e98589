package builders

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
)

// SpecConfigMap carries the benchmark to the runner pods as the CouchBenchmark they read
// with `-f` (metadata reduced to the name, no status).
func SpecConfigMap(bench *benchv1.CouchBenchmark) (*corev1.ConfigMap, error) {
	doc := benchv1.CouchBenchmark{
		TypeMeta:   metav1.TypeMeta{APIVersion: benchv1.GroupVersion.String(), Kind: "CouchBenchmark"},
		ObjectMeta: metav1.ObjectMeta{Name: bench.Name},
		Spec:       bench.Spec,
	}
	data, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name: SpecConfigMapName(bench), Namespace: bench.Namespace,
			Labels: Labels(bench, "", ""), OwnerReferences: ownedBy(bench),
		},
		Data: map[string]string{SpecKey: string(data)},
	}, nil
}

// Keys of the results ConfigMap.
const (
	ResultsCSVKey      = "results.csv"
	ResultsMarkdownKey = "results.md"
	// ResultsHTMLKey is one self-contained page of charts and tables.
	ResultsHTMLKey = "report.html"
	// ComparisonKey is the comparison with the baseline, every row, as JSON.
	ComparisonKey = "comparison.json"
)

// ResultsConfigMap holds a benchmark's results rendered for people: data maps file names
// (ResultsMarkdownKey, ResultsCSVKey) to their contents, rendered from the stored documents.
func ResultsConfigMap(bench *benchv1.CouchBenchmark, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name: ResultsConfigMapName(bench), Namespace: bench.Namespace,
			Labels: Labels(bench, "", ""), OwnerReferences: ownedBy(bench),
		},
		Data: data,
	}
}

// DocumentConfigMapName holds one arm's results document: "<benchmark>-results-<arm>".
func DocumentConfigMapName(bench *benchv1.CouchBenchmark, arm string) string {
	return name(maxObjectName, bench.Name, "results", arm)
}

// DocumentConfigMap stores one arm's full results document (gzip-compressed JSON: every
// repetition, the time series, the provenance), labelled so that
// `kubectl get cm -l bench.couchbench.io/results-of=<benchmark> -o json | couchbench report -`
// finds every arm's.
func DocumentConfigMap(bench *benchv1.CouchBenchmark, arm string, document []byte) *corev1.ConfigMap {
	labels := Labels(bench, arm, "")
	labels[benchv1.LabelResultsOf] = LabelValue(bench.Name)
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name: DocumentConfigMapName(bench, arm), Namespace: bench.Namespace, Labels: labels, OwnerReferences: ownedBy(bench),
		},
		BinaryData: map[string][]byte{benchv1.DocumentKey: document},
	}
}

// HistoryKey is the history ConfigMap's key: internal/history's History as JSON.
const HistoryKey = "history.json"

// HistoryHTMLKey is the history ConfigMap's page: every metric's trend over the runs with its
// shifts (internal/report.HistoryHTML).
const HistoryHTMLKey = "history.html"

// HistoryLabels mark a ConfigMap as the history of the schedule of that name in its namespace.
func HistoryLabels(schedule string) map[string]string {
	return map[string]string{benchv1.LabelSchedule: LabelValue(schedule), LabelManagedBy: ManagedBy}
}

// HistoryConfigMapName is a schedule's history: "<schedule>-history".
func HistoryConfigMapName(schedule string) string { return name(maxObjectName, schedule, "history") }

// MaxHistoryBytes bounds the history ConfigMap's data (the JSON and the page together). The API
// server refuses a ConfigMap whose data exceeds 1 MiB (validation counts the values only, the
// metadata has etcd's larger request limit to itself); the rest of the MiB is for what the
// schedule adds to the JSON between two of its runs (the shifts it announces), which is not
// trimmed.
const MaxHistoryBytes = 900 << 10

// HistoryConfigMap keeps the headline numbers of a schedule's successful runs, the newest
// history.MaxRuns or as many as fit MaxHistoryBytes, after the runs themselves are pruned: what its
// verdicts take the spread between runs from, and where it looks for shifts. It is the history
// of the schedule of that name (its labels say so), not of one schedule object: it outlives a
// deleted schedule unless the schedule's historyRetentionPolicy says Delete (the schedule then
// owns it). page, when there is one, is the history's HTML page.
func HistoryConfigMap(namespace, schedule string, data, page []byte) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name: HistoryConfigMapName(schedule), Namespace: namespace,
			Labels: HistoryLabels(schedule),
		},
		Data: map[string]string{HistoryKey: string(data)},
	}
	if page != nil {
		cm.Data[HistoryHTMLKey] = string(page)
	}
	return cm
}

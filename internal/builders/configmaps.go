package builders

import (
	"bytes"
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/results"
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
	ResultsJSONKey     = "results.json"
	ResultsCSVKey      = "results.csv"
	ResultsMarkdownKey = "results.md"
)

// ResultsDocument is the JSON of the results ConfigMap.
type ResultsDocument struct {
	SchemaVersion int                          `json:"schemaVersion"`
	Benchmark     string                       `json:"benchmark"`
	Phase         benchv1.Phase                `json:"phase"`
	StartedAt     *metav1.Time                 `json:"startedAt,omitempty"`
	CompletedAt   *metav1.Time                 `json:"completedAt,omitempty"`
	Server        string                       `json:"server,omitempty"`
	Results       []benchv1.QueryServerResults `json:"results"`
}

// ResultsConfigMap holds a benchmark's results as JSON, CSV and a Markdown table laid out
// like the seed articles' tables. It is rewritten after every step, so that a failed step
// keeps what came before it.
func ResultsConfigMap(bench *benchv1.CouchBenchmark, server string) (*corev1.ConfigMap, error) {
	st := bench.Status
	doc := ResultsDocument{
		SchemaVersion: results.SchemaVersion, Benchmark: bench.Name, Phase: st.Phase,
		StartedAt: st.StartTime, CompletedAt: st.CompletionTime, Server: server, Results: st.Results,
	}
	data, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	report := results.Report{Benchmark: bench.Name, Server: server, Results: st.Results}
	if st.StartTime != nil {
		report.StartedAt = st.StartTime.Time
	}
	var csv, md bytes.Buffer
	if err := results.WriteCSV(&csv, []results.Report{report}); err != nil {
		return nil, err
	}
	if err := report.WriteMarkdown(&md); err != nil {
		return nil, err
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name: ResultsConfigMapName(bench), Namespace: bench.Namespace,
			Labels: Labels(bench, "", ""), OwnerReferences: ownedBy(bench),
		},
		Data: map[string]string{ResultsJSONKey: string(data), ResultsCSVKey: csv.String(), ResultsMarkdownKey: md.String()},
	}, nil
}

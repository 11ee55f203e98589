package charts_test

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// The plain rules file, for a Prometheus without the Prometheus Operator.
var plainRules = filepath.Join("..", "config", "prometheus", "couchbench-rules.yaml")

// The chart's copy of the rules is config/prometheus's, byte for byte (make manifests copies
// it); these tests render the chart with the Helm SDK, no cluster.
func TestChartRulesAreThePlainRules(t *testing.T) {
	plain, err := os.ReadFile(plainRules)
	if err != nil {
		t.Fatal(err)
	}
	copied, err := os.ReadFile(filepath.Join(chartDir, "files", "couchbench-rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(plain, copied) {
		t.Errorf("charts/couchbench-operator/files/couchbench-rules.yaml differs from config/prometheus/couchbench-rules.yaml: run make manifests")
	}
}

// The PrometheusRule is opt-in; enabled, its spec is the plain file's rules, with the labels
// a Prometheus selects rules by and, when set, the runbook links moved to another page.
func TestPrometheusRuleIsOptIn(t *testing.T) {
	if off := render(t, nil); len(off["PrometheusRule"]) != 0 {
		t.Errorf("by default the chart renders %d PrometheusRules", len(off["PrometheusRule"]))
	}
	plain, err := os.ReadFile(plainRules)
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]any
	if err := yaml.Unmarshal(plain, &want); err != nil {
		t.Fatal(err)
	}

	on := render(t, map[string]any{"metrics": map[string]any{"prometheusRule": map[string]any{"enabled": true, "labels": map[string]any{"release": "prometheus"}}}})
	if len(on["PrometheusRule"]) != 1 {
		t.Fatalf("rendered %d PrometheusRules, want 1", len(on["PrometheusRule"]))
	}
	rule := on["PrometheusRule"][0]
	if labels := rule["metadata"].(map[string]any)["labels"].(map[string]any); labels["release"] != "prometheus" {
		t.Errorf("PrometheusRule labels %v lack release: prometheus", labels)
	}
	if !reflect.DeepEqual(rule["spec"], want) {
		got, _ := yaml.Marshal(rule["spec"])
		t.Errorf("the PrometheusRule's spec differs from %s:\n%s", plainRules, got)
	}

	const runbooks = "https://wiki.example.com/couchbench-alerts"
	moved := render(t, map[string]any{"metrics": map[string]any{"prometheusRule": map[string]any{"enabled": true, "runbookBaseURL": runbooks}}})
	spec, _ := yaml.Marshal(moved["PrometheusRule"][0]["spec"])
	alerts := strings.Count(string(plain), "- alert: ")
	if n := strings.Count(string(spec), "runbook_url: "+runbooks+"#couchbench"); n != alerts || strings.Contains(string(spec), "github.com") {
		t.Errorf("with runbookBaseURL, %d runbook links point at it, want all %d:\n%s", n, alerts, spec)
	}
}

package dashboard

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTheChartsDashboardReadsWhole(t *testing.T) {
	d, err := Read(filepath.Join("..", "..", Path))
	if err != nil {
		t.Fatal(err)
	}
	queries, err := d.Queries(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range queries {
		if q.Panel == "" || q.Expr == "" || strings.Contains(q.Expr, "$") {
			t.Errorf("query %+v: want a panel title and an expression with every variable replaced", q)
		}
	}
	vars, err := d.Variables()
	if err != nil || len(vars) == 0 {
		t.Fatalf("variables %v (%v)", vars, err)
	}
	for _, v := range vars {
		if v.Label == "" || strings.Contains(v.Selector, "$") {
			t.Errorf("variable %+v", v)
		}
	}
}

func TestRowsUnknownVariablesAndLegends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d.json")
	write := func(json string) *Dashboard {
		t.Helper()
		if err := os.WriteFile(path, []byte(json), 0o600); err != nil {
			t.Fatal(err)
		}
		d, err := Read(path)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	d := write(`{"panels":[{"title":"row","panels":[{"title":"inner","targets":[{"expr":"m{a=~\"$v\"}","legendFormat":"{{a}} {{ b }}"}]}]}],
		"templating":{"list":[{"name":"v","type":"query","definition":"label_values(m, a)","allValue":".*"}]}}`)
	queries, err := d.Queries(nil)
	if err != nil || len(queries) != 1 || queries[0].Panel != "inner" || queries[0].Expr != `m{a=~".*"}` ||
		strings.Join(queries[0].Legend, ",") != "a,b" {
		t.Fatalf("queries %+v (%v)", queries, err)
	}
	q := queries[0]
	for _, tc := range []struct {
		series []Series
		want   bool
	}{
		{nil, false},
		{[]Series{{Metric: map[string]string{"a": "x", "b": "y"}, Value: []any{1.0, "2"}}}, true},
		{[]Series{{Metric: map[string]string{"a": "x"}, Value: []any{1.0, "2"}}}, false},
		{[]Series{{Metric: map[string]string{"a": "x", "b": "y"}, Value: []any{1.0, "0"}}}, false},
		{[]Series{{Metric: map[string]string{"a": "x", "b": "y"}, Value: []any{1.0, "NaN"}}}, false},
	} {
		if got := q.Answered(tc.series); got != tc.want {
			t.Errorf("Answered(%+v) = %t, want %t", tc.series, got, tc.want)
		}
	}
	if set, err := d.Queries(map[string]string{"v": "x.y"}); err != nil || set[0].Expr != `m{a=~"x\\.y"}` {
		t.Errorf("the variable set to x.y: %+v (%v)", set, err)
	}
	if _, err := write(`{"panels":[{"title":"p","targets":[{"expr":"m{a=~\"$nope\"}"}]}]}`).Queries(nil); err == nil ||
		!strings.Contains(err.Error(), "$nope") {
		t.Errorf("a query naming no variable: %v", err)
	}
	if _, err := write(`{"templating":{"list":[{"name":"v","type":"query","definition":"query_result(m)"}]}}`).Variables(); err == nil {
		t.Error("a variable that is not label_values was accepted")
	}
}

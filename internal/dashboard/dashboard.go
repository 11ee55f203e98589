// Package dashboard reads the chart's Grafana dashboard as Prometheus will be asked by it:
// every panel's query with the variables at their All value, the labels its legend names,
// and the label each query variable lists. The tests that run the dashboard on a real
// Prometheus (make test's on the reconcilers' metrics, the e2e suite's in the cluster) read
// it through here, so that a panel added to the JSON is run by both without a new test.
package dashboard

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// Path is the dashboard's file, from the module's root.
const Path = "charts/couchbench-operator/files/dashboard.json"

// Query is one panel query.
type Query struct {
	Panel string
	// Expr is the query with every variable at its All value, as Grafana sends it with All
	// selected.
	Expr string
	// Legend are the labels the legend names ({{label}}): a series without one is drawn
	// without its name.
	Legend []string
}

// Variable is a query variable, label_values(Selector, Label), Selector with the variables at
// their All value.
type Variable struct {
	Name, Selector, Label string
}

// Series is one series of an instant query's answer, as Prometheus's API writes it.
type Series struct {
	Metric map[string]string `json:"metric"`
	// Value is the sample: its time, and its value as a string.
	Value []any `json:"value"`
}

// Answered says whether series answer q as its panel needs: at least one series, every
// series with every label of the legend, and at least one value that is a positive number (a
// rate that saw its counter grow, a quantile with observations).
func (q Query) Answered(series []Series) bool {
	positive := false
	for _, s := range series {
		for _, l := range q.Legend {
			if s.Metric[l] == "" {
				return false
			}
		}
		var value string
		if len(s.Value) == 2 {
			value, _ = s.Value[1].(string)
		}
		f, err := strconv.ParseFloat(value, 64)
		positive = positive || (err == nil && f > 0 && !math.IsInf(f, 0))
	}
	return positive
}

// Dashboard is what is read of the JSON.
type Dashboard struct {
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name       string `json:"name"`
			Type       string `json:"type"`
			Definition string `json:"definition"`
			AllValue   string `json:"allValue"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	Title   string `json:"title"`
	Targets []struct {
		Expr         string `json:"expr"`
		LegendFormat string `json:"legendFormat"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // a row's
}

var (
	labelValues   = regexp.MustCompile(`^label_values\((.+),\s*(\w+)\)$`)
	legendLabel   = regexp.MustCompile(`\{\{\s*(\w+)\s*\}\}`)
	grafanaVarRef = regexp.MustCompile(`\$\{?(\w+)\}?`)
)

// Read reads the dashboard at path.
func Read(path string) (*Dashboard, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var d Dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &d, nil
}

// Queries are the panels' queries, rows' panels included, in the order of the JSON, with the
// variables named in values set to them (as a regular expression matching that value alone)
// and the others at their All value. It is an error for a query to name a variable without
// an All value, and for there to be none.
func (d *Dashboard) Queries(values map[string]string) ([]Query, error) {
	var out []Query
	var walk func([]panel) error
	walk = func(panels []panel) error {
		for _, p := range panels {
			for _, tg := range p.Targets {
				expr, err := d.substitute(tg.Expr, values)
				if err != nil {
					return fmt.Errorf("panel %q: %w", p.Title, err)
				}
				q := Query{Panel: p.Title, Expr: expr}
				for _, m := range legendLabel.FindAllStringSubmatch(tg.LegendFormat, -1) {
					q.Legend = append(q.Legend, m[1])
				}
				out = append(out, q)
			}
			if err := walk(p.Panels); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(d.Panels); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("the dashboard has no panel queries")
	}
	return out, nil
}

// Variables are the query variables; each must be label_values(selector, label).
func (d *Dashboard) Variables() ([]Variable, error) {
	var out []Variable
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		m := labelValues.FindStringSubmatch(v.Definition)
		if m == nil {
			return nil, fmt.Errorf("variable %s: %q is not label_values(selector, label)", v.Name, v.Definition)
		}
		selector, err := d.substitute(m[1], nil)
		if err != nil {
			return nil, fmt.Errorf("variable %s: %w", v.Name, err)
		}
		out = append(out, Variable{Name: v.Name, Selector: selector, Label: m[2]})
	}
	return out, nil
}

// substitute puts each variable's value, or else its All value, in its place.
func (d *Dashboard) substitute(expr string, values map[string]string) (string, error) {
	var err error
	out := grafanaVarRef.ReplaceAllStringFunc(expr, func(ref string) string {
		name := grafanaVarRef.FindStringSubmatch(ref)[1]
		if v, ok := values[name]; ok {
			// A regular expression inside a PromQL string, whose backslashes escape.
			return strings.ReplaceAll(regexp.QuoteMeta(v), `\`, `\\`)
		}
		for _, v := range d.Templating.List {
			if v.Name == name && v.AllValue != "" {
				return v.AllValue
			}
		}
		err = fmt.Errorf("%q uses $%s, which is no variable with an All value", expr, name)
		return ref
	})
	return out, err
}

package results

import "time"

// Direction says which way a metric gets better.
type Direction int

const (
	// HigherIsBetter: rates (changes/s, docs/s, requests/s).
	HigherIsBetter Direction = iota
	// LowerIsBetter: times and latencies, error rates.
	LowerIsBetter
)

// Metric is one headline number of a run, with every repetition that measured it: what
// comparisons judge, plots draw and the operator exports as a gauge.
type Metric struct {
	QueryServer string `json:"queryServer"`
	// Profile is the document profile ("" for none).
	Profile string `json:"profile,omitempty"`
	// Workload is indexing, seeding, viewReads, writes or reads.
	Workload string `json:"workload"`
	// Variant is the reducer, view, insert mode or k6 scenario.
	Variant string `json:"variant,omitempty"`
	// Name is what is measured, with its unit: changes_per_second, docs_per_second,
	// seconds_per_read, requests_per_second, p50_ms, p95_ms, p99_ms, error_rate.
	Name      string    `json:"name"`
	Direction Direction `json:"direction"`
	// Samples are the repetitions' values, in the order they ran.
	Samples []float64 `json:"samples"`
	// Value is the headline: the median of the samples.
	Value float64 `json:"value"`
}

// Key names the metric within a run: what two runs' metrics are matched by.
func (m Metric) Key() string {
	return m.QueryServer + "/" + m.Profile + "/" + m.Workload + "/" + m.Variant + "/" + m.Name
}

// Metrics lists the headline metrics of documents, arms in spec order. Aggregate's compact
// status shapes and these come from the same measurements.
func Metrics(docs ...*Document) []Metric {
	var out []Metric
	add := func(m Metric) {
		if len(m.Samples) == 0 {
			return
		}
		m.Value = Summarize(m.Samples).Median
		out = append(out, m)
	}
	for _, d := range inSpecOrder(docs) {
		for _, a := range d.Arms {
			for _, p := range a.Profiles {
				base := Metric{QueryServer: a.QueryServer, Profile: p.Profile}
				if p.Seeding != nil {
					m := base
					m.Workload, m.Variant, m.Name, m.Direction = "seeding", "bulk", "docs_per_second", HigherIsBetter
					var costs []cpuCost
					for _, s := range p.Seedings() {
						m.Samples = append(m.Samples, s.DocsPerSecond())
						costs = append(costs, cpuCost{s.CPUSeconds, s.Stored})
					}
					add(m)
					add(cpuMetric(m, cpuCostMetric, costs))
				}
				for _, ix := range p.Indexing {
					m := base
					m.Workload, m.Variant, m.Name, m.Direction = "indexing", ix.Reducer, "changes_per_second", HigherIsBetter
					var costs []cpuCost
					for _, r := range ix.Runs {
						m.Samples = append(m.Samples, r.DocsPerSecond)
						costs = append(costs, cpuCost{r.CPUSeconds, r.Documents})
					}
					add(m)
					add(cpuMetric(m, cpuCostMetric, costs))
				}
				for _, vr := range p.ViewReads {
					m := base
					m.Workload, m.Variant, m.Name, m.Direction = "viewReads", string(vr.View), "seconds_per_read", LowerIsBetter
					var costs []cpuCost
					for _, r := range vr.Reads {
						m.Samples = append(m.Samples, r.Elapsed.Seconds())
						costs = append(costs, cpuCost{r.CPUSeconds, r.Rows})
					}
					add(m)
					add(cpuMetric(m, cpuCostMetric, costs))
				}
				for _, mode := range writeModes(p.Writes) {
					m := base
					m.Workload, m.Variant, m.Name, m.Direction = "writes", mode.name, "docs_per_second", HigherIsBetter
					var costs []cpuCost
					for _, w := range mode.runs {
						m.Samples = append(m.Samples, w.DocsPerSecond())
						costs = append(costs, cpuCost{w.CPUSeconds, w.Stored})
					}
					add(m)
					add(cpuMetric(m, cpuCostMetric, costs))
				}
				if p.Reads != nil && len(p.Reads.Runners) > 0 {
					out = append(out, readsMetrics(base, *p.Reads)...)
				}
			}
		}
	}
	return out
}

// cpuCostMetric names the server's CPU cost in the runner's workloads; the k6 reads', per
// request, is cpuCostPerRequest.
const (
	cpuCostMetric     = "cpu_seconds_per_1000_docs"
	cpuCostPerRequest = "cpu_seconds_per_1000_requests"
)

// cpuCost is what the server spent on one repetition and the documents it built, loaded,
// read or stored.
type cpuCost struct {
	seconds float64
	docs    int64
}

// cpuMetric is the server's CPU cost of a workload's repetitions, per 1,000 documents (or
// requests: name), beside their rate (from the same repetitions): no samples unless every
// repetition was metered, so that its rounds pair with the rate's.
func cpuMetric(rate Metric, name string, costs []cpuCost) Metric {
	m := rate
	m.Name, m.Direction, m.Samples = name, LowerIsBetter, nil
	if len(costs) == 0 {
		return Metric{}
	}
	for _, c := range costs {
		if !(c.seconds > 0) || c.docs <= 0 {
			return Metric{}
		}
		m.Samples = append(m.Samples, 1000*c.seconds/float64(c.docs))
	}
	return m
}

// readsMetrics are one arm's k6 numbers, the runners added up as Aggregate adds them:
// requests/s with a sample per repetition, the rest one sample each.
func readsMetrics(base Metric, r Reads) []Metric {
	c := compactReads(r, 0)
	var out []Metric
	add := func(name string, dir Direction, v float64, samples []float64) {
		m := base
		m.Workload, m.Variant, m.Name, m.Direction = "reads", r.Scenario, name, dir
		m.Samples, m.Value = samples, v
		out = append(out, m)
	}
	one := func(name string, dir Direction, v float64) { add(name, dir, v, []float64{v}) }
	rates, _ := r.repetitions()
	add("requests_per_second", HigherIsBetter, float64(c.RequestsPerSecond), rates)
	if cpu := cpuMetric(out[0], cpuCostPerRequest, r.cpuCosts()); len(cpu.Samples) > 0 {
		add(cpu.Name, cpu.Direction, Summarize(cpu.Samples).Median, cpu.Samples)
	}
	for _, p := range []struct{ name, value string }{{"p50_ms", c.P50}, {"p95_ms", c.P95}, {"p99_ms", c.P99}} {
		if d, err := time.ParseDuration(p.value); err == nil {
			one(p.name, LowerIsBetter, float64(d)/float64(time.Millisecond))
		}
	}
	var failed, requests int64
	for _, run := range r.Runners {
		failed += run.Failed
		requests += run.Requests
	}
	if requests > 0 {
		one("error_rate", LowerIsBetter, float64(failed)/float64(requests))
	}
	return out
}

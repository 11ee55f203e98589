package plot

import (
	"fmt"
	"sort"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/couchbench/couchbench/internal/measured"
	"github.com/couchbench/couchbench/internal/results"
)

// IndexingCurves draws, per document profile and reducer, the indexing rate over time from
// the /_active_tasks series recorded during the builds: one line per arm, the build of the
// arm's median run (by documents/s; of an even number of runs the slower middle one), so
// that each line is a typical build and the lines stay readable side by side. The rate is
// over all shard copies, as /_active_tasks counts changes.
func IndexingCurves(docs ...*results.Document) ([]Chart, error) {
	type key struct{ profile, reducer string }
	type line struct {
		arm    int
		name   string
		points plotter.XYs
	}
	lines := map[key][]line{}
	var keys []key
	for i, arm := range armsInOrder(docs) {
		for _, p := range arm.Profiles {
			for _, ix := range p.Indexing {
				points := rates(medianRun(ix.Runs).Series)
				if len(points) == 0 {
					continue
				}
				k := key{p.Profile, ix.Reducer}
				if _, ok := lines[k]; !ok {
					keys = append(keys, k)
				}
				lines[k] = append(lines[k], line{arm: i, name: arm.QueryServer, points: points})
			}
		}
	}
	var out []Chart
	for _, k := range keys {
		title := fmt.Sprintf("Indexing progress, %s documents, %s reducer (median run per query server)", k.profile, k.reducer)
		p := newPlot(title, "seconds since the build was triggered", "changes/s over all shard copies")
		p.X.Tick.Marker, p.X.AutoRescale = linearTicks{}, true
		p.Add(horizontalGrid())
		legend := newLegend()
		for _, ln := range lines[k] {
			l, err := plotter.NewLine(ln.points)
			if err != nil {
				return nil, fmt.Errorf("indexing curve of %s, %s, %s: %w", ln.name, k.profile, k.reducer, err)
			}
			l.StepStyle = plotter.PreStep
			l.Color = colorOf(ln.arm)
			l.Width = vg.Points(1.5)
			p.Add(l)
			legend.Add(ln.name, l)
		}
		svg, err := render(p, legend)
		if err != nil {
			return nil, err
		}
		out = append(out, Chart{Name: "indexing-curve-" + slug(k.profile) + "-" + slug(k.reducer) + ".svg", Title: title, SVG: svg})
	}
	return out, nil
}

// armsInOrder lists the documents' arms in the spec's order, as the tables list them.
func armsInOrder(docs []*results.Document) []results.Arm {
	byName := map[string]results.Arm{}
	for _, d := range docs {
		for _, a := range d.Arms {
			byName[a.QueryServer] = a
		}
	}
	order := results.Aggregate(docs...).Results
	out := make([]results.Arm, len(order))
	for i, q := range order {
		out[i] = byName[q.QueryServer]
	}
	return out
}

// medianRun is the run with the median documents/s; of an even number, the slower middle
// one. The zero Run when there are none.
func medianRun(runs []measured.IndexBuild) measured.IndexBuild {
	if len(runs) == 0 {
		return measured.IndexBuild{}
	}
	sorted := append([]measured.IndexBuild(nil), runs...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].DocsPerSecond < sorted[j].DocsPerSecond })
	return sorted[(len(sorted)-1)/2]
}

// window is the shortest time an indexing curve's rate is measured over. Between two polls
// 250 ms apart the rate swings by half either way (shard copies report in batches), and
// with several arms on one chart that noise hides the differences between them.
const windowMs = 1000

// rates turns a build's progress into changes/s over time, as steps for a PreStep line: each
// point is the rate since the previous point, over at least windowMs (the last one over what
// is left), drawn over the time between them. The curve starts at the trigger with nothing
// indexed (the design document is new; polls before the trigger only show that); a series
// in which nothing moved has no curve.
func rates(series []measured.BuildPoint) plotter.XYs {
	var from measured.BuildPoint
	xys := plotter.XYs{{X: 0, Y: 0}}
	rateTo := func(pt measured.BuildPoint) {
		rate := float64(pt.ChangesDone-from.ChangesDone) / (seconds(pt.AtMs) - seconds(from.AtMs))
		xys = append(xys, plotter.XY{X: seconds(pt.AtMs), Y: rate})
		from = pt
	}
	var last measured.BuildPoint
	for _, pt := range series {
		if pt.AtMs <= 0 {
			continue
		}
		if pt.AtMs-from.AtMs >= windowMs {
			rateTo(pt)
		}
		last = pt
	}
	if last.ChangesDone == 0 {
		return nil
	}
	if last.AtMs > from.AtMs {
		rateTo(last)
	}
	return xys
}

func seconds(ms int64) float64 { return float64(ms) / 1000 }

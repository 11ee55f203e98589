package plot

import (
	"fmt"
	"math"

	gonum "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/couchbench/couchbench/internal/results"
)

// IndexingBars draws the seed-000 table: per document profile, the median indexing rate
// (documents / time to a fully built view) of each arm and reducer as grouped bars, arms
// along x and one bar per reducer, with whiskers from the slowest to the fastest run.
func IndexingBars(docs ...*results.Document) ([]Chart, error) {
	byProfile := map[string]*grid{}
	var profiles []string
	for _, m := range results.Metrics(docs...) {
		if m.Workload != "indexing" || m.Name != "changes_per_second" {
			continue
		}
		g, ok := byProfile[m.Profile]
		if !ok {
			g = newGrid()
			byProfile[m.Profile] = g
			profiles = append(profiles, m.Profile)
		}
		b := bar{value: m.Value, low: m.Value, high: m.Value}
		for _, s := range m.Samples {
			b.low, b.high = min(b.low, s), max(b.high, s)
		}
		g.set(m.QueryServer, m.Variant, b)
	}
	var out []Chart
	for _, profile := range profiles {
		if byProfile[profile].empty() {
			continue
		}
		title := fmt.Sprintf("Indexing, %s documents: changes/s (median of runs, whiskers min–max)", profile)
		svg, err := byProfile[profile].draw(title, "query server", "changes/s: documents / time to fully built view", true)
		if err != nil {
			return nil, fmt.Errorf("indexing bars of profile %s: %w", profile, err)
		}
		out = append(out, Chart{Name: "indexing-" + slug(profile) + ".svg", Title: title, SVG: svg})
	}
	return out, nil
}

// ReadLatencies draws the k6 read latency percentiles (p50, p95, p99) of each arm. With
// several k6 runners an arm's percentile is the worst runner's, an upper bound, as the
// tables report it.
func ReadLatencies(docs ...*results.Document) ([]Chart, error) {
	g := newGrid()
	for _, m := range results.Metrics(docs...) {
		if m.Workload != "reads" {
			continue
		}
		switch m.Name {
		case "p50_ms", "p95_ms", "p99_ms":
			g.set(m.QueryServer, m.Name[:3], bar{value: m.Value})
		}
	}
	if g.empty() {
		return nil, nil
	}
	title := "k6 reads: request latency percentiles"
	if severalRunners(docs) {
		title += " (several runners: the worst runner's, an upper bound)"
	}
	svg, err := g.draw(title, "query server", "ms", false)
	if err != nil {
		return nil, fmt.Errorf("read latencies: %w", err)
	}
	return []Chart{{Name: "reads-latency.svg", Title: title, SVG: svg}}, nil
}

func severalRunners(docs []*results.Document) bool {
	for _, d := range docs {
		for _, a := range d.Arms {
			for _, p := range a.Profiles {
				if p.Reads != nil && len(p.Reads.Runners) > 1 {
					return true
				}
			}
		}
	}
	return false
}

// WriteRates draws, per document profile, the documents/s of each insert mode: a row per
// mode, a dot per arm, on a logarithmic axis. Serial and bulk inserts are two orders of
// magnitude apart: bars on a linear axis would leave the slow modes invisible, and bars on
// a logarithmic one have lengths that mean nothing. A rate of 0 has no place on it and is
// left to the table.
func WriteRates(docs ...*results.Document) ([]Chart, error) {
	byProfile := map[string]*grid{}
	var profiles []string
	for _, m := range results.Metrics(docs...) {
		if m.Workload != "writes" || m.Name != "docs_per_second" || m.Value <= 0 {
			continue
		}
		g, ok := byProfile[m.Profile]
		if !ok {
			g = newGrid()
			byProfile[m.Profile] = g
			profiles = append(profiles, m.Profile)
		}
		g.set(m.Variant, m.QueryServer, bar{value: m.Value})
	}
	var out []Chart
	for _, profile := range profiles {
		if byProfile[profile].empty() {
			continue
		}
		title := fmt.Sprintf("Writes, %s documents: documents/s per insert mode", profile)
		svg, err := byProfile[profile].dots(title, "acknowledged documents/s (logarithmic)")
		if err != nil {
			return nil, fmt.Errorf("write rates of profile %s: %w", profile, err)
		}
		out = append(out, Chart{Name: "writes-" + slug(profile) + ".svg", Title: title, SVG: svg})
	}
	return out, nil
}

// bar is one bar (or dot): its value and the range its whisker spans.
type bar struct{ value, low, high float64 }

// grid collects bars by group (along an axis) and series (one bar per group, one colour, one
// legend entry), both in the order they first appear. A group can lack a series' bar.
type grid struct {
	groups, series []string
	bars           map[[2]string]bar
}

func newGrid() *grid { return &grid{bars: map[[2]string]bar{}} }

// set adds a bar. A value that is not a finite number cannot be drawn and is left to the
// tables.
func (g *grid) set(group, series string, b bar) {
	for _, v := range []float64{b.value, b.low, b.high} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return
		}
	}
	if !contains(g.groups, group) {
		g.groups = append(g.groups, group)
	}
	if !contains(g.series, series) {
		g.series = append(g.series, series)
	}
	g.bars[[2]string{group, series}] = b
}

func (g *grid) empty() bool { return len(g.bars) == 0 }

func contains(names []string, name string) bool {
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

// draw renders the grid as grouped bars, with min–max whiskers if whiskers is set.
func (g *grid) draw(title, xLabel, yLabel string, whiskers bool) ([]byte, error) {
	p := newPlot(title, xLabel, yLabel)
	p.Add(horizontalGrid())
	legend := newLegend()
	// The data area's width is only known once drawn; width/2 is a safe guess that leaves
	// gaps between groups at any legend width.
	barWidth := min(vg.Length(36), width/2/vg.Length(len(g.groups)*len(g.series)))
	for s, name := range g.series {
		offset := (vg.Length(s) - vg.Length(len(g.series)-1)/2) * barWidth
		var first *plotter.BarChart
		for x, group := range g.groups {
			b, ok := g.bars[[2]string{group, name}]
			if !ok {
				continue
			}
			bc, err := plotter.NewBarChart(plotter.Values{b.value}, barWidth)
			if err != nil {
				return nil, err
			}
			bc.XMin, bc.Offset = float64(x), offset
			bc.Color = colorOf(s)
			bc.LineStyle.Width = 0
			p.Add(bc)
			if whiskers && b.high > b.low {
				p.Add(whisker{x: float64(x), offset: offset, low: b.low, high: b.high, capWidth: barWidth / 3})
			}
			if first == nil {
				first = bc
			}
		}
		legend.Add(name, first)
	}
	p.NominalX(g.groups...)
	// Half a group's room at either end, so that the grid spans the outer groups too.
	p.X.Min, p.X.Max = -0.5, float64(len(g.groups))-0.5
	return render(p, legend)
}

// whisker marks the range of one bar's samples: a vertical line with caps. It is placed by
// the bar's offset from its group's centre, in drawing units like the bar's own; gonum's
// error bars are placed in data units only.
type whisker struct {
	x         float64
	offset    vg.Length
	low, high float64
	capWidth  vg.Length
}

var whiskerStyle = draw.LineStyle{Color: gray, Width: vg.Points(1.2)}

func (w whisker) Plot(c draw.Canvas, p *gonum.Plot) {
	trX, trY := p.Transforms(&c)
	x := trX(w.x) + w.offset
	lo, hi := trY(w.low), trY(w.high)
	c.StrokeLine2(whiskerStyle, x, lo, x, hi)
	c.StrokeLine2(whiskerStyle, x-w.capWidth/2, lo, x+w.capWidth/2, lo)
	c.StrokeLine2(whiskerStyle, x-w.capWidth/2, hi, x+w.capWidth/2, hi)
}

// DataRange makes the y axis reach the fastest run.
func (w whisker) DataRange() (xmin, xmax, ymin, ymax float64) { return w.x, w.x, w.low, w.high }

// dots renders the grid as a dot plot on a logarithmic x axis: a row per group, the first
// on top, and in each row a dot per series, each series a little lower than the one
// before so that equal values stay apart.
func (g *grid) dots(title, xLabel string) ([]byte, error) {
	p := newPlot(title, xLabel, "")
	p.X.Scale, p.X.Tick.Marker, p.X.AutoRescale = gonum.LogScale{}, logTicks{}, true
	verticalGrid := plotter.NewGrid()
	verticalGrid.Horizontal.Color, verticalGrid.Vertical.Color = nil, light
	p.Add(verticalGrid)
	legend := newLegend()
	rows := len(g.groups)
	for s, name := range g.series {
		shift := 0.5 * (float64(s) - float64(len(g.series)-1)/2) / float64(len(g.series))
		var xys plotter.XYs
		for r, group := range g.groups {
			if b, ok := g.bars[[2]string{group, name}]; ok {
				xys = append(xys, plotter.XY{X: b.value, Y: float64(rows-1-r) - shift})
			}
		}
		sc, err := plotter.NewScatter(xys)
		if err != nil {
			return nil, err
		}
		sc.Color, sc.Shape, sc.Radius = colorOf(s), draw.CircleGlyph{}, vg.Points(3.5)
		p.Add(sc)
		legend.Add(name, sc)
	}
	top := make([]string, rows)
	for r, group := range g.groups {
		top[rows-1-r] = group
	}
	p.NominalY(top...)
	p.Y.Min, p.Y.Max = -0.5, float64(rows)-0.5
	return render(p, legend)
}

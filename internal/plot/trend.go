package plot

import (
	"fmt"
	"math"
	"sort"
	"time"

	gonum "gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// TrendSeries is one headline metric over a schedule's history of runs.
type TrendSeries struct {
	// Title names the metric, e.g. "spidermonkey, small, indexing builtin: changes/s"; it
	// is the chart's title and names its file.
	Title string
	// Unit labels the y axis, e.g. "changes/s".
	Unit   string
	Points []TrendPoint
}

// TrendPoint is one run's value of the metric.
type TrendPoint struct {
	// At is when the run was scheduled.
	At    time.Time
	Value float64
	// Shift, when set, says that a shift of the metric's level began with this run, e.g.
	// "-15.2%"; Worse says it is a regression.
	Shift string
	Worse bool
}

// Shift colours: Okabe and Ito's vermillion for a regression, bluish green for an
// improvement, apart from the runs' blue.
var (
	worseColor  = palette[5]
	betterColor = palette[2]
)

// Trend draws each series as its values over time (UTC), one chart per series with points,
// and a dashed line at each run where a shift began, labelled with its size. A value that is
// not a finite number cannot be drawn and is left out.
func Trend(series ...TrendSeries) ([]Chart, error) {
	var out []Chart
	for _, s := range series {
		points := append([]TrendPoint(nil), s.Points...)
		sort.SliceStable(points, func(i, j int) bool { return points[i].At.Before(points[j].At) })
		var all plotter.XYs
		var shifts []TrendPoint
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, pt := range points {
			if math.IsNaN(pt.Value) || math.IsInf(pt.Value, 0) {
				continue
			}
			all = append(all, plotter.XY{X: float64(pt.At.Unix()), Y: pt.Value})
			lo, hi = math.Min(lo, pt.Value), math.Max(hi, pt.Value)
			if pt.Shift != "" {
				shifts = append(shifts, pt)
			}
		}
		if len(all) == 0 {
			continue
		}
		p := newPlot(s.Title, "scheduled at (UTC)", s.Unit)
		p.Add(horizontalGrid())
		p.X.Tick.Marker = timeTicks{}
		if first, last := all[0].X, all[len(all)-1].X; first == last {
			// One run: a day around it, so that the time ticks are whole hours.
			p.X.Min, p.X.Max = first-12*3600, last+12*3600
		}
		line, dots, err := plotter.NewLinePoints(all)
		if err != nil {
			return nil, fmt.Errorf("trend %q: %w", s.Title, err)
		}
		line.Color, line.Width = colorOf(0), vg.Points(1.5)
		dots.Color, dots.Shape, dots.Radius = colorOf(0), draw.CircleGlyph{}, vg.Points(2.5)
		p.Add(line, dots)
		legend := newLegend()
		legend.Add("run", line, dots)
		legended := map[bool]bool{}
		for _, sh := range shifts {
			mark, label, err := shiftMark(sh, lo, hi)
			if err != nil {
				return nil, fmt.Errorf("trend %q: %w", s.Title, err)
			}
			p.Add(mark, label)
			if !legended[sh.Worse] {
				legended[sh.Worse] = true
				name := "shift, better"
				if sh.Worse {
					name = "shift, worse"
				}
				legend.Add(name, mark)
			}
		}
		svg, err := render(p, legend)
		if err != nil {
			return nil, err
		}
		out = append(out, Chart{Name: "trend-" + slug(s.Title) + ".svg", Title: s.Title, SVG: svg})
	}
	return out, nil
}

// shiftMark is the dashed line from lo to hi at the run where a shift began, and its label
// at the top.
func shiftMark(pt TrendPoint, lo, hi float64) (*plotter.Line, *plotter.Labels, error) {
	x := float64(pt.At.Unix())
	c := betterColor
	if pt.Worse {
		c = worseColor
	}
	mark, err := plotter.NewLine(plotter.XYs{{X: x, Y: lo}, {X: x, Y: hi}})
	if err != nil {
		return nil, nil, err
	}
	mark.Color, mark.Width, mark.Dashes = c, vg.Points(1.5), []vg.Length{vg.Points(4), vg.Points(3)}
	label, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: x, Y: hi}}, Labels: []string{" " + pt.Shift}})
	if err != nil {
		return nil, nil, err
	}
	label.TextStyle[0].Color = c
	label.TextStyle[0].Font = font.From(sans, 10)
	return mark, label, nil
}

// timeSteps are the round steps of a time axis.
var timeSteps = []time.Duration{time.Minute, 5 * time.Minute, 15 * time.Minute, 30 * time.Minute, time.Hour, 3 * time.Hour,
	6 * time.Hour, 12 * time.Hour, 24 * time.Hour, 2 * 24 * time.Hour, 7 * 24 * time.Hour, 14 * 24 * time.Hour,
	28 * 24 * time.Hour, 91 * 24 * time.Hour, 364 * 24 * time.Hour}

// timeTicks label a time axis of Unix seconds at the first round step that puts at most
// maxTicks ticks on it, in UTC: whole hours and days rather than gonum's 04:46 and 18:40.
type timeTicks struct{}

func (timeTicks) Ticks(lo, hi float64) []gonum.Tick {
	var step float64
	for _, s := range timeSteps {
		step = s.Seconds()
		if math.Floor(hi/step)-math.Ceil(lo/step) < maxTicks {
			break
		}
	}
	format := "2006-01-02\n15:04"
	if step >= (24 * time.Hour).Seconds() {
		format = "2006-01-02"
	}
	var ticks []gonum.Tick
	for i := math.Ceil(lo / step); i <= math.Floor(hi/step); i++ {
		at := time.Unix(int64(i*step), 0).UTC()
		ticks = append(ticks, gonum.Tick{Value: i * step, Label: at.Format(format)})
	}
	return ticks
}

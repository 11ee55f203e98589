// Package plot draws a run's results as SVG charts with gonum/plot: the seed-000 indexing
// table as grouped bars, the indexing curves from the recorded /_active_tasks series, k6
// read latencies, write rates and, for schedules, the trend of a metric over runs. Every
// function is pure: the same documents give the same bytes (no timestamps, no random ids),
// so charts can be stored with the results and compared. A chart without data is not drawn.
package plot

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"strconv"
	"strings"

	gonum "gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/couchbench/couchbench/internal/results"
)

// Chart is one rendered chart.
type Chart struct {
	// Name is a file name for the chart, unique among a run's charts, e.g.
	// "indexing-small.svg".
	Name string
	// Title says what the chart shows; the SVG draws it too.
	Title string
	// SVG is a standalone SVG document.
	SVG []byte
}

// Charts renders every chart of a run's documents, in the order a report shows them:
// indexing bars, indexing curves, read latencies, write rates.
func Charts(docs ...*results.Document) ([]Chart, error) {
	var out []Chart
	for _, chartsOf := range []func(...*results.Document) ([]Chart, error){IndexingBars, IndexingCurves, ReadLatencies, WriteRates} {
		charts, err := chartsOf(docs...)
		if err != nil {
			return nil, err
		}
		out = append(out, charts...)
	}
	return out, nil
}

// Chart size: wide enough for seven insert modes or four arms of three bars side by side,
// and for a legend to the right of the data.
const (
	width  = 720 * vg.Length(1)
	height = 330 * vg.Length(1)
)

// sans is the charts' font. gonum/plot measures text with its own embedded Liberation
// fonts, so layout needs no system font; the SVG names the family and the viewer draws it.
// Liberation Sans has the metrics of Arial and Helvetica, which svgFontFallback names as
// fallbacks, so the text fits where it was measured even without Liberation installed.
var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

// svgFontFallback rewrites gonum's font-family (the embedded font's own family name) into a
// list with metric-compatible fallbacks.
var svgFontFallback = strings.NewReplacer("font-family:Liberation Sans;", "font-family:Liberation Sans,Arial,Helvetica,sans-serif;")

// palette is Okabe and Ito's colour-blind-safe palette (black left out: it is the axes').
var palette = []color.Color{
	color.RGBA{R: 0x00, G: 0x72, B: 0xb2, A: 0xff}, // blue
	color.RGBA{R: 0xe6, G: 0x9f, B: 0x00, A: 0xff}, // orange
	color.RGBA{R: 0x00, G: 0x9e, B: 0x73, A: 0xff}, // bluish green
	color.RGBA{R: 0xcc, G: 0x79, B: 0xa7, A: 0xff}, // reddish purple
	color.RGBA{R: 0x56, G: 0xb4, B: 0xe9, A: 0xff}, // sky blue
	color.RGBA{R: 0xd5, G: 0x5e, B: 0x00, A: 0xff}, // vermillion
	color.RGBA{R: 0xf0, G: 0xe4, B: 0x42, A: 0xff}, // yellow
}

func colorOf(i int) color.Color { return palette[i%len(palette)] }

// gray draws the whiskers, light the grid behind the data.
var (
	gray  = color.Gray{Y: 0x40}
	light = color.Gray{Y: 0xdd}
)

// horizontalGrid is grid lines at the y ticks only: values are read off y; vertical lines
// would cut through bars and across time.
func horizontalGrid() *plotter.Grid {
	g := plotter.NewGrid()
	g.Vertical.Color = nil
	g.Horizontal.Color = light
	return g
}

// newPlot is a plot with the charts' fonts, the given labels and round y ticks.
func newPlot(title, xLabel, yLabel string) *gonum.Plot {
	p := gonum.New()
	p.Title.Text = title
	p.Title.Padding = 8
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	for _, sty := range []*text.Style{&p.Title.TextStyle, &p.X.Label.TextStyle, &p.Y.Label.TextStyle, &p.X.Tick.Label, &p.Y.Tick.Label} {
		sty.Font = font.From(sans, sty.Font.Size)
	}
	p.Title.TextStyle.Font = font.From(sans, 13)
	p.Y.Tick.Marker, p.Y.AutoRescale = linearTicks{}, true
	return p
}

// newLegend is a legend in the charts' font, drawn to the right of the data by render.
func newLegend() gonum.Legend {
	l := gonum.NewLegend()
	l.TextStyle.Font = font.From(sans, 11)
	l.Top, l.Left = true, true
	l.Padding = 3
	return l
}

// legendGap separates the data from the legend; margin keeps text off the chart's edges,
// where a viewer's rounding could clip it.
const (
	legendGap = 12
	margin    = 6
)

// render draws p, with legend (if it has entries) to the right of it rather than over the
// data, and returns the SVG document. gonum/plot panics on data it cannot draw (a logarithmic
// axis over a range that reaches 0): that is this chart's error, never a crash of the process
// that renders the report.
func render(p *gonum.Plot, legend gonum.Legend) (svg []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("drawing %q: %v", p.Title.Text, r)
		}
	}()
	canvas := vgsvg.New(width, height)
	dc := draw.Crop(draw.New(canvas), margin, -margin, margin, -margin)
	if r := legend.Rectangle(dc); r.Size().X > 0 {
		lw := r.Size().X + legendGap
		// The legend starts level with the top of the data, below the title.
		titleHeight := p.Title.TextStyle.Rectangle(p.Title.Text).Size().Y + p.Title.Padding
		legend.Draw(draw.Crop(dc, dc.Size().X-lw+legendGap, 0, 0, -titleHeight))
		dc = draw.Crop(dc, 0, -lw, 0, 0)
	}
	p.Draw(dc)
	var buf bytes.Buffer
	// A bytes.Buffer does not fail.
	_, _ = canvas.WriteTo(&buf)
	return []byte(svgFontFallback.Replace(buf.String())), nil
}

// linearTicks are labelled ticks at a round step (1, 2, 2.5 or 5 times a power of ten)
// that covers the range in at most maxTicks steps, labelled with thousands separators
// (12,000 reads faster than 12000). With the axis' AutoRescale the axis ends on a tick.
type linearTicks struct{}

const maxTicks = 7

func (linearTicks) Ticks(lo, hi float64) []gonum.Tick {
	exp := math.Pow10(int(math.Floor(math.Log10((hi - lo) / maxTicks))))
	var step float64
	// A step of 20 powers of ten always fits.
	for _, m := range []float64{1, 2, 2.5, 5, 10, 20} {
		step = m * exp
		if math.Ceil(hi/step)-math.Floor(lo/step) <= maxTicks {
			break
		}
	}
	// As many decimals as the step has: 2.5 needs one, 25 none.
	decimals := 0
	for scaled := step; math.Abs(scaled-math.Round(scaled)) > 1e-6*scaled; scaled *= 10 {
		decimals++
	}
	var ticks []gonum.Tick
	for i := math.Floor(lo / step); i <= math.Ceil(hi/step); i++ {
		v := i*step + 0 // + 0 turns -0 into 0
		ticks = append(ticks, gonum.Tick{Value: v, Label: groupDigits(strconv.FormatFloat(v, 'f', decimals, 64))})
	}
	return ticks
}

// logTicks are gonum's powers of ten with thousands separators.
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []gonum.Tick {
	ticks := gonum.LogTicks{Prec: -1}.Ticks(lo, hi)
	for i := range ticks {
		ticks[i].Label = groupDigits(ticks[i].Label)
	}
	return ticks
}

// groupDigits puts commas between thousands in the integer part of a formatted number.
func groupDigits(label string) string {
	sign, rest := "", label
	if strings.HasPrefix(rest, "-") {
		sign, rest = "-", rest[1:]
	}
	whole, frac, hasFrac := strings.Cut(rest, ".")
	if len(whole) <= 3 || strings.ContainsAny(whole, "e+") {
		return label
	}
	var b strings.Builder
	for i, ch := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(ch)
	}
	if hasFrac {
		return sign + b.String() + "." + frac
	}
	return sign + b.String()
}

// slug makes a file-name part of s: lower case letters, digits and dashes.
func slug(s string) string {
	var b strings.Builder
	dash := false
	for _, ch := range strings.ToLower(s) {
		if ('a' <= ch && ch <= 'z') || ('0' <= ch && ch <= '9') {
			b.WriteRune(ch)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	return strings.TrimSuffix(b.String(), "-")
}

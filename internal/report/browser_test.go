//go:build browser

package report_test

// The page in a real browser, Debian's Chromium headless: `make report-check` installs
// chromium if it is missing and runs this with -tags browser. Without chromium it fails.

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/couchbench/couchbench/internal/compare"
	"github.com/couchbench/couchbench/internal/plot"
	"github.com/couchbench/couchbench/internal/results"
)

func TestBrowserRendersThePage(t *testing.T) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("Debian's chromium is needed (apt-get install -y chromium; make report-check does it): %v", err)
	}
	dir := t.TempDir()
	d := realisticRun(t)
	page := filepath.Join(dir, "report.html")
	if err := os.WriteFile(page, []byte(render(t, comparison, d)), 0o644); err != nil {
		t.Fatal(err)
	}
	browse := func(args ...string) []byte {
		t.Helper()
		// A guard against a hung browser, not a measurement.
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, chromium, append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
			"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
			"--hide-scrollbars", "--user-data-dir=" + filepath.Join(dir, "profile")}, args...)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("chromium %v: %v\n%s", args, err, stderr.String())
		}
		return stdout.Bytes()
	}

	// The DOM Chromium built from the page: every chart an <svg> element, every table.
	dom := string(browse("--dump-dom", "file://"+page))
	charts, err := plot.Charts(d)
	if err != nil {
		t.Fatal(err)
	}
	runTables, err := compare.RunTables([]*results.Document{d})
	if err != nil {
		t.Fatal(err)
	}
	tables := len(runTables) + len(comparison)
	if strings.Count(dom, "<svg") != len(charts) || strings.Count(dom, "<table") != tables ||
		!strings.Contains(dom, "<h1>couchbench: nightly-query-servers</h1>") {
		t.Errorf("the DOM has %d <svg> (want %d) and %d <table> (want %d):\n%.500s",
			strings.Count(dom, "<svg"), len(charts), strings.Count(dom, "<table"), tables, dom)
	}
	for _, c := range charts {
		if !strings.Contains(dom, c.Title) && !strings.Contains(dom, strings.ReplaceAll(c.Title, "'", "&#39;")) {
			t.Errorf("the DOM lacks the chart %q", c.Title)
		}
	}

	// What Chromium painted: the top 4000 pixels hold the header and the first charts, so
	// the charts' bar and line colours must be there, not just text on white.
	shot := filepath.Join(dir, "page.png")
	browse("--screenshot="+shot, "--window-size=1280,4000", "file://"+page)
	data, err := os.ReadFile(shot)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != 1280 || b.Dy() != 4000 {
		t.Errorf("screenshot of %v", b)
	}
	colours := paint(img)
	blue, orange := color.RGBA{R: 0x00, G: 0x72, B: 0xb2, A: 0xff}, color.RGBA{R: 0xe6, G: 0x9f, B: 0x00, A: 0xff}
	if len(colours) < 2 || colours[blue] < 1000 || colours[orange] < 1000 {
		t.Errorf("%d colours; %d pixels of the charts' blue, %d of their orange", len(colours), colours[blue], colours[orange])
	}
}

// paint counts the pixels of each colour.
func paint(img image.Image) map[color.RGBA]int {
	counts := map[color.RGBA]int{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			counts[color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)]++
		}
	}
	return counts
}

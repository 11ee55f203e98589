// Command shiftpower measures the shift detector (internal/changepoint) on synthetic schedule
// histories, looked at run by run as a schedule does, against the detector it replaced and
// against Apache Otava (apache-otava from PyPI, run by hack/otava.sh), on every noise model of
// docs/measurement.md ("A schedule's history and its shifts"), and prints the two tables there:
//
//   - false shifts with nothing changed: per 1,000 runs, each look at the newest runs a
//     schedule's history keeps (history.MaxRuns for the online detector; 100, what the history
//     kept before, for the others) and, for the online detector, also over the whole series
//     replayed; the share of histories flagged somewhere in their first 100 looks, and in a
//     year of nightly looks;
//
//   - power: a 15% drop flagged within 3 runs and a 10% drop within 5, and how often the
//     first report names the drop's first run; and, as a reference, how often the split of
//     greatest likelihood names it for a method told there is a drop (namingReference).
//
//     go run ./hack/shiftpower [-histories 100] [-looks 500] [-long 200] [-runs 1000] [-power 2000]
//     [-before 20,50] [-models NAME] [-detectors NAME,...] [-life 20] [-late 500] [-otava COMMAND]
//
// Otava is slow (tens of milliseconds a look): its rows are measured on their own, on fewer
// histories, e.g. -detectors Otava -histories 20 -power 200.
//
// The recorded model resamples the residuals of testdata/recorded.json ({"series": [values,
// oldest first], ...}; -recorded to read another file).
package main

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/couchbench/couchbench/internal/changepoint"
	"github.com/couchbench/couchbench/internal/history"
)

// referenceName names the row of namingReference in the power table.
const referenceName = "best split, told there is a drop"

// onlineName names the detector of internal/changepoint, the only one also replayed whole.
const onlineName = "online (this package)"

// keptBefore is how many runs a schedule's history kept with the detector before, which each
// of its looks saw.
const keptBefore = 100

// nightsInAYear is how many nightly looks make a year.
const nightsInAYear = 365

// detector is a method under test: the change points it shows at a look at x, by index.
type detector struct {
	name string
	// kept is how many of the newest runs each look sees: what the history keeps.
	kept int
	// changes are the shifts it shows; ends, where it has them, the change points that end a
	// dip shown before (not shifts of their own).
	changes, ends func(x []float64) []int
	// looks, where it has them, makes a new history's looks: given the history's runs so far
	// at each look in turn (x[:n] for n = 1, 2, ...), each shows what changes shows, going on
	// from the look before as a schedule does rather than replaying the runs, so that a look
	// costs one look.
	looks func() func(x []float64) []int
}

// onlineShows is the first runs of the online detector's change points that do or do not end a
// dip.
func onlineShows(ends bool) func(x []float64) []int {
	return func(x []float64) []int {
		return firstRuns(changepoint.Detect(x, onlineOptions), ends)
	}
}

// firstRuns are the first runs of the change points that do, or do not, end a dip.
func firstRuns(cps []changepoint.ChangePoint, ends bool) []int {
	var out []int
	for _, cp := range cps {
		if cp.Returns == ends {
			out = append(out, cp.Index)
		}
	}
	return out
}

// onlineLooks are a history's looks by the online detector, each going on from the one before
// (changepoint.Resume): what onlineShows(false) shows at each.
func onlineLooks() func(x []float64) []int {
	var known changepoint.Known
	return func(x []float64) []int {
		known = changepoint.Resume(x, known, onlineOptions)
		return firstRuns(known.Found, false)
	}
}

// onlineOptions are the online detector's: its series' share of the schedule's budget (-share).
var onlineOptions changepoint.Options

// otavaName names the detector of Apache Otava.
const otavaName = "Otava"

var detectors = []detector{
	{onlineName, history.MaxRuns, onlineShows(false), onlineShows(true), onlineLooks},
	{"segmentation (before)", keptBefore, func(x []float64) []int {
		cps := segmentationDetect(x, segOptions{})
		out := make([]int, len(cps))
		for i, cp := range cps {
			out[i] = cp.Index
		}
		return out
	}, nil, nil},
	{otavaName, keptBefore, nil, nil, nil}, // the command of -otava
}

// calibration is what a detector shows on histories without a change.
type calibration struct {
	perThousand     float64 // false shifts per 1,000 runs, each look at the newest kept runs
	first100, aYear float64 // share of histories flagged within the first 100 looks, 365 looks
}

// newAlarms counts the change points shown now that were not shown, within 3 runs, at the
// look before: one false shift moved by a run between looks is still one.
func newAlarms(now, before []int) int {
	count := 0
	for _, cp := range now {
		if !slices.ContainsFunc(before, func(b int) bool { return b >= cp-3 && b <= cp+3 }) {
			count++
		}
	}
	return count
}

func calibrate(d detector, m noiseModel, seed uint64, histories, runs int) calibration {
	rng := rand.New(rand.NewPCG(seed, 1))
	var alarms, first100, aYear int
	for range histories {
		x := m.draw(rng, runs)
		look := d.changes
		if d.looks != nil && runs <= d.kept {
			look = d.looks()
		}
		var shown []int
		flagged := 0 // the first look that showed a change point
		for n := 3; n <= runs; n++ {
			lo := max(0, n-d.kept)
			now := look(x[lo:n])
			for i := range now {
				now[i] += lo
			}
			if k := newAlarms(now, shown); k > 0 {
				alarms += k
				if flagged == 0 {
					flagged = n
				}
			}
			shown = now
		}
		if flagged > 0 && flagged <= 100 {
			first100++
		}
		if flagged > 0 && flagged <= nightsInAYear {
			aYear++
		}
	}
	return calibration{perThousand: 1000 * float64(alarms) / float64(histories*runs),
		first100: float64(first100) / float64(histories), aYear: float64(aYear) / float64(histories)}
}

// replayed is the false shifts per 1,000 runs of the online detector over whole series: each
// change point it returns was found at one look and never withdrawn.
func replayed(m noiseModel, seed uint64, histories, runs int) float64 {
	rng := rand.New(rand.NewPCG(seed, 3))
	found := 0
	for range histories {
		found += len(onlineShows(false)(m.draw(rng, runs)))
	}
	return 1000 * float64(found) / float64(histories*runs)
}

// power is how often a drop is flagged within the runs given, how often the first report names
// its first run, and how often the look at the last of those runs does (a young level's first
// run is refined as more runs come).
type power struct{ flagged, namedFirst, namedEnd float64 }

func measurePower(d detector, m noiseModel, seed uint64, histories, before int, drop float64, within int) power {
	rng := rand.New(rand.NewPCG(seed, 2))
	var flagged, namedFirst, namedEnd int
	for range histories {
		x := m.draw(rng, before+within)
		for i := range x {
			x[i] *= 1000
			if i >= before {
				x[i] *= 1 - drop
			}
		}
		first := true
		for n := before + 1; n <= before+within; n++ {
			lo := max(0, n-d.kept)
			var near []int
			for _, cp := range d.changes(x[lo:n]) {
				if cp+lo >= before-3 {
					near = append(near, cp+lo)
				}
			}
			if len(near) > 0 && first {
				first = false
				flagged++
				if slices.Contains(near, before) {
					namedFirst++
				}
			}
			if n == before+within && slices.Contains(near, before) {
				namedEnd++
			}
		}
	}
	h := float64(histories)
	return power{float64(flagged) / h, float64(namedFirst) / h, float64(namedEnd) / h}
}

// namingReference is how often the split of greatest likelihood names a drop's first run: over
// the runs given, the split with the largest |t| between the means of the logarithms on either
// side (bestSplit, with no fewest runs on either side; for one mean shift in independent normal
// noise, the most likely split), found by a method told that there is exactly one drop and
// deciding nothing. It is a reference for the "named by its first run" figures, not a bound: it
// shows how often the runs themselves point at the drop's first run. It draws the histories
// measurePower draws.
func namingReference(m noiseModel, seed uint64, histories, before int, drop float64, within int) float64 {
	rng := rand.New(rand.NewPCG(seed, 2))
	named := 0
	for range histories {
		logs := m.draw(rng, before+within)
		for i, v := range logs {
			if i >= before {
				v *= 1 - drop
			}
			logs[i] = math.Log(v)
		}
		if split, _, _ := bestSplit(logs, segOptions{MinBefore: 1, MinAfter: 1}); split == before {
			named++
		}
	}
	return float64(named) / float64(histories)
}

func percent(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) }

func main() {
	histories := flag.Int("histories", 100, "unchanged histories per model and detector, looked at run by run")
	looks := flag.Int("looks", 500, "looks at each of them (at least 365 for the year's figure)")
	long := flag.Int("long", 200, "unchanged series per model replayed whole by the online detector")
	runs := flag.Int("runs", 1000, "runs of each of those")
	powerHistories := flag.Int("power", 2000, "histories per power figure")
	befores := flag.String("before", "20,50", "runs before the drop in the power histories (a list)")
	recordedPath := flag.String("recorded", "hack/shiftpower/testdata/recorded.json", "recorded series to resample")
	only := flag.String("models", "", "only the models whose name contains one of these (a list separated by |)")
	onlyDetectors := flag.String("detectors", "", "only the detectors whose name contains one of these (a comma-separated list)")
	workers := flag.Int("workers", 2, "models measured at once")
	lifeHistories := flag.Int("life", 0, "histories of 2,000 runs per model looked at as the operator does, for the online detector's life table (0: no table)")
	earlyHistories := flag.Int("early", 0, "histories of 50 runs per model for the life table's first 50 looks (0: those of -life)")
	lateHistories := flag.Int("late", 0, "histories per figure of the table of small steps found late and of dips (0: no table)")
	lateStep := flag.Float64("late-step", 0.05, "the drop of that table's step (0.05: 5%)")
	share := flag.Float64("share", 1, "the online detector's series' share of the schedule's budget "+
		"(0.5: one of two judged metrics; not in the life table, which judges one)")
	cvs := flag.String("cv", "", "lognormal models of these CVs, in percent (a list), beside the others")
	otavaCommand := flag.String("otava", "hack/otava.sh", "the command that runs Apache Otava (hack/otava/detect.py's protocol)")
	flag.Parse()

	models := []noiseModel{lognormal(0.02), lognormal(0.035), lognormal(0.07), lognormal(0.15),
		autoregressive(0.035, 0.3), autoregressive(0.035, 0.5), studentT(0.035), stalls(0.035),
		regimes(0.035), slowRuns(lognormal(0.035), 1.0/20, []int{2}, true), slowRuns(lognormal(0.035), 1.0/30, []int{2, 3}, false), slowStart(0.035),
		autoregressive(0.035, 0.7), wholeUnits(autoregressive(0.01, 0.5), 0.01), slowRuns(autoregressive(0.035, 0.5), 1.0/30, []int{2, 3}, false),
		slowRuns(lognormal(0.035), 1.0/30, []int{3}, true)}
	onlineOptions.FalseAlarmsPerRun = history.FalseAlarmsPerRun * *share
	for _, cv := range strings.Split(*cvs, ",") {
		if percent, err := strconv.ParseFloat(strings.TrimSpace(cv), 64); err == nil {
			models = append(models, lognormal(percent/100))
		} else if cv != "" {
			fmt.Fprintln(os.Stderr, "-cv: want a list of CVs in percent, got", *cvs)
			os.Exit(2)
		}
	}
	if rec, err := recorded(*recordedPath); err != nil {
		fmt.Fprintln(os.Stderr, "recorded models left out:", err)
	} else {
		models = append(models, rec...)
	}
	list := strings.Split(*befores, ",")
	beforeRuns := make([]int, 0, len(list))
	for _, b := range list {
		n, err := strconv.Atoi(strings.TrimSpace(b))
		if err != nil || n < 1 {
			fmt.Fprintln(os.Stderr, "-before: want a list of run counts, got", *befores)
			os.Exit(2)
		}
		beforeRuns = append(beforeRuns, n)
	}
	models = slices.DeleteFunc(models, func(m noiseModel) bool {
		return !slices.ContainsFunc(strings.Split(*only, "|"), func(name string) bool { return strings.Contains(m.name, name) })
	})
	detectors = slices.DeleteFunc(detectors, func(d detector) bool {
		return !slices.ContainsFunc(strings.Split(*onlyDetectors, ","), func(name string) bool { return strings.Contains(d.name, name) })
	})
	otava := &external{command: *otavaCommand}
	defer otava.stop()
	for i := range detectors {
		if detectors[i].name == otavaName {
			detectors[i].changes = otava.changes
		}
	}

	calibrationRows := make([][]string, len(models))
	powerRows := make([][]string, len(models))
	lifeRows := make([][]string, len(models))
	lateRows := make([][]string, len(models))
	var wg sync.WaitGroup
	jobs := make(chan int)
	for range *workers {
		wg.Go(func() {
			for i := range jobs {
				m := models[i]
				seed := m.seed()
				for _, d := range detectors {
					if *lifeHistories > 0 && d.name == onlineName {
						stages := life(m, seed, *lifeHistories, lifeStages[len(lifeStages)-1].to)
						if *earlyHistories > 0 {
							stages[0] = life(m, seed+1, *earlyHistories, lifeStages[0].to)[0]
						}
						lifeRows[i] = append(lifeRows[i], fmt.Sprintf("| %s | %s | %.2f | %.2f | %.2f |", m.name, d.name, stages[0], stages[1], stages[2]))
					}
					if *lateHistories > 0 {
						found := late(d, m, seed, *lateHistories, 50, *lateStep, lateAfter)
						row := fmt.Sprintf("| %s | %s |", m.name, d.name)
						for _, f := range found {
							row += " " + percent(f) + " |"
						}
						for _, depth := range []float64{0.10, 0.20} {
							shown := dip(d, m, seed, *lateHistories, 50, 2, depth, 10)
							row += fmt.Sprintf(" %s | %s | %s |", percent(shown.shown), percent(shown.lasting), percent(shown.withEnd))
						}
						lateRows[i] = append(lateRows[i], row)
					}
					c := calibrate(d, m, seed, *histories, *looks)
					replay := "–"
					if d.name == onlineName {
						replay = fmt.Sprintf("%.2f", replayed(m, seed, *long, *runs))
					}
					calibrationRows[i] = append(calibrationRows[i], fmt.Sprintf("| %s | %s | %.2f | %s | %s | %s |",
						m.name, d.name, c.perThousand, replay, percent(c.first100), percent(c.aYear)))
					for _, before := range beforeRuns {
						p15 := measurePower(d, m, seed, *powerHistories, before, 0.15, 3)
						p10 := measurePower(d, m, seed, *powerHistories, before, 0.10, 5)
						powerRows[i] = append(powerRows[i], fmt.Sprintf("| %s | %s | %d | %s | %s | %s | %s | %s | %s |",
							m.name, d.name, before, percent(p15.flagged), percent(p15.namedFirst), percent(p15.namedEnd),
							percent(p10.flagged), percent(p10.namedFirst), percent(p10.namedEnd)))
					}
				}
				for _, before := range beforeRuns {
					powerRows[i] = append(powerRows[i], fmt.Sprintf("| %s | %s | %d | – | – | %s | – | – | %s |", m.name, referenceName, before,
						percent(namingReference(m, seed, *powerHistories, before, 0.15, 3)),
						percent(namingReference(m, seed, *powerHistories, before, 0.10, 5))))
				}
			}
		})
	}
	for i := range models {
		jobs <- i
	}
	close(jobs)
	wg.Wait()

	fmt.Printf("Unchanged histories: %d per model looked at %d times, run by run (the newest %d runs at each look, %d for "+
		"the detectors before); whole series replayed: %d of %d runs.\n\n", *histories, *looks, history.MaxRuns, keptBefore, *long, *runs)
	fmt.Println("| noise | detector | false shifts per 1,000 runs | the same, whole series replayed " +
		"| flagged in the first 100 looks | in a year of nightly looks |")
	fmt.Println("|---|---|---|---|---|---|")
	printRows(calibrationRows)
	if *lifeHistories > 0 {
		fmt.Printf("\nA schedule's life: %d histories of %d unchanged runs per model, looked at after every run as the operator does "+
			"(the newest %d runs at each look), false shifts announced per 1,000 runs.\n", *lifeHistories, 2*history.MaxRuns, history.MaxRuns)
		if *earlyHistories > 0 {
			fmt.Printf("The %s are measured on %d histories of their own of %d runs.\n", lifeStages[0].name, *earlyHistories, lifeStages[0].to)
		}
		fmt.Println()
		fmt.Println("| noise | detector | " + lifeStages[0].name + " | " + lifeStages[1].name + " | " + lifeStages[2].name + " |")
		fmt.Println("|---|---|---|---|---|")
		printRows(lifeRows)
	}
	if *lateHistories > 0 {
		step := strconv.FormatFloat(*lateStep*100, 'f', -1, 64) + "%"
		fmt.Printf("\nA %s step after 50 unchanged runs: found (a change point within 3 runs of it) at the look the given runs "+
			"after it; a dip of 2 runs after 50 unchanged runs: shown at some look, and at the look 10 runs after its end shown "+
			"as a shift that lasts or with its end. %d histories per figure.\n\n", step, *lateHistories)
		fmt.Println("| noise | detector | " + step + " step, after 10 runs | 20 runs | 50 runs | 100 runs " +
			"| 10% dip shown | as lasting | with its end | 20% dip shown | as lasting | with its end |")
		fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|---|")
		printRows(lateRows)
	}
	fmt.Printf("\nDrops after the given unchanged runs, %d histories per figure.\n\n", *powerHistories)
	fmt.Println("| noise | detector | runs before | 15% drop flagged within 3 runs | its first report names its first run " +
		"| named by its first run after 3 runs | 10% drop within 5 runs | its first report names its first run | named by its first run after 5 runs |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|")
	printRows(powerRows)
}

// printRows prints each model's rows, in the models' order.
func printRows(rows [][]string) {
	for _, r := range rows {
		if len(r) > 0 {
			fmt.Println(strings.Join(r, "\n"))
		}
	}
}

// lateAfter are the runs after a small step at which late says whether it was found.
var lateAfter = []int{10, 20, 50, 100}

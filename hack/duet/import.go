package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/measured"
	"github.com/couchbench/couchbench/internal/results"
)

// importCommand turns the results documents of runs by the operator's runner (couchbench
// run --arm-pid ... --out DOC.json, two arms, one profile, one reducer) into duet's records,
// so that `duet replay` judges and resamples the runner's own rounds as it does its own. The
// CPU is the runner's reading (the build's measured part only); a load log (lines of unix
// seconds and the load average, as `while :; do echo "$(date +%s) $(cut -d' ' -f1
// /proc/loadavg)"; sleep 5; done` writes) gives each round its load, else it is not recorded.
func importCommand(args []string, w io.Writer) error {
	fs := flag.NewFlagSet("import", flag.ExitOnError)
	label := fs.String("label", "", "the label of the imported runs (A/A runs' begin with what replay's -aa says)")
	loadFile := fs.String("load", "", "a load log, `file`")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *label == "" || fs.NArg() == 0 {
		return errors.New("usage: duet import -label L [-load FILE] DOC.json (one or more)")
	}
	load, err := readLoad(*loadFile)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	for _, name := range fs.Args() {
		data, err := os.ReadFile(name)
		if err != nil {
			return err
		}
		var doc results.Document
		if err := json.Unmarshal(data, &doc); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		recs, err := runRecords(&doc, *label, load)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		for _, rec := range recs {
			if err := enc.Encode(rec); err != nil {
				return err
			}
		}
	}
	return nil
}

// runRecords are a document's rounds of its index step, the first arm as "ref" and the second
// as "cand", then its end.
func runRecords(doc *results.Document, label string, load loadLog) ([]record, error) {
	if len(doc.Arms) != 2 {
		return nil, fmt.Errorf("%d arms; import takes runs of two", len(doc.Arms))
	}
	var series [2]results.IndexingSeries
	for i, a := range doc.Arms {
		if len(a.Profiles) != 1 || len(a.Profiles[0].Indexing) != 1 {
			return nil, fmt.Errorf("arm %s: import takes one profile and one reducer", a.QueryServer)
		}
		series[i] = a.Profiles[0].Indexing[0]
	}
	order, stop := orderTurns, results.SequentialStop{Rounds: len(series[0].Runs)}
	for _, rec := range doc.Steps {
		if rec.Step != benchv1.StepIndex {
			continue
		}
		if rec.Duet {
			order = orderDuet
		}
		if rec.Sequential != nil {
			stop = *rec.Sequential
		}
	}
	id := doc.Benchmark + "-" + doc.StartedAt.UTC().Format("0102t150405")
	var recs []record
	add := func(round int, ref, cand measured.IndexBuild) {
		at := ref.StartedAt
		if cand.StartedAt.Before(at) {
			at = cand.StartedAt
		}
		recs = append(recs, record{Kind: "round", Run: id, Label: label, Order: order, At: at, Load1: load.at(at), Round: round,
			Arms: map[string]build{"ref": imported(ref), "cand": imported(cand)}})
	}
	if series[0].WarmUp != nil && series[1].WarmUp != nil {
		add(0, *series[0].WarmUp, *series[1].WarmUp)
	}
	n := min(len(series[0].Runs), len(series[1].Runs))
	for i := range n {
		if series[0].Runs[i].CPUSeconds <= 0 || series[1].Runs[i].CPUSeconds <= 0 {
			return nil, fmt.Errorf("round %d: a build has no CPU time (run with --arm-pid for both arms)", i+1)
		}
		add(i+1, series[0].Runs[i], series[1].Runs[i])
	}
	end := record{Kind: kindRun, Run: id, Label: label, Order: order, At: doc.FinishedAt, Load1: load.at(doc.FinishedAt),
		Rounds: n, Stopped: stop.Stopped, Seconds: doc.FinishedAt.Sub(doc.StartedAt).Seconds()}
	return append(recs, end), nil
}

// imported is a runner's build as duet records one: no process-tree reading, no call time.
func imported(b measured.IndexBuild) build {
	return build{StartedAt: b.StartedAt, Built: b.Built.Seconds(), CPU: b.CPUSeconds}
}

// loadLog is the machine's load average over time, by unix second.
type loadLog struct {
	times []int64
	loads []float64
}

func readLoad(name string) (loadLog, error) {
	var l loadLog
	if name == "" {
		return l, nil
	}
	f, err := os.Open(name)
	if err != nil {
		return l, err
	}
	defer func() { _ = f.Close() }() // read only
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 2 {
			continue
		}
		t, err1 := strconv.ParseInt(fields[0], 10, 64)
		v, err2 := strconv.ParseFloat(fields[1], 64)
		if err1 != nil || err2 != nil {
			return l, fmt.Errorf("%s: %q is not \"unix-seconds load\"", name, sc.Text())
		}
		l.times, l.loads = append(l.times, t), append(l.loads, v)
	}
	return l, sc.Err()
}

// at is the last load recorded at or before t, within a minute; -1: not recorded.
func (l loadLog) at(t time.Time) float64 {
	i := sort.Search(len(l.times), func(i int) bool { return l.times[i] > t.Unix() }) - 1
	if i < 0 || t.Unix()-l.times[i] > 60 {
		return -1
	}
	return l.loads[i]
}

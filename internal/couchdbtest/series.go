package couchdbtest

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
)

// series holds the /_active_tasks series recorded from a real Apache CouchDB 3.4.3
// (testdata/README.md), embedded so that a test reads them from any working directory.
//
//go:embed testdata/*_active_tasks_series*.json
var series embed.FS

// Series is a recorded /_active_tasks time series: GET /_active_tasks every 250 ms while one
// blocking view request built an index on CouchDB 3.4.3.
type Series struct {
	Name        string
	ViewRequest ViewRequest
	Samples     []Sample
}

// ViewRequest is the blocking view request of a series; times are relative to the first
// sample.
type ViewRequest struct {
	Path                 string
	Status               int
	StartRelMs, EndRelMs int64
	ElapsedS             float64
}

// Sample is one /_active_tasks answer of a series.
type Sample struct {
	TRelMs int64
	RTTMs  float64
	Status int
	// Body is the exact /_active_tasks JSON array of that sample, compact; for compact-encoded
	// files with CouchDB's member order restored (see decode).
	Body json.RawMessage
}

// seriesFile is both layouts of a series file: plain ("samples") and the compact encoding
// of shared/couchdb/tools/series_codec.py ("samples_encoded" with "task_fields",
// "string_fields" and "strings").
type seriesFile struct {
	ViewRequest struct {
		Path     string  `json:"path"`
		Status   int     `json:"status"`
		StartRel int64   `json:"t_start_rel_ms"`
		EndRel   int64   `json:"t_end_rel_ms"`
		Elapsed  float64 `json:"elapsed_s"`
	} `json:"view_request"`
	Samples []struct {
		TRel   int64           `json:"t_rel_ms"`
		RTT    float64         `json:"rtt_ms"`
		Status int             `json:"status"`
		Body   json.RawMessage `json:"body"`
	} `json:"samples"`
	TaskFields   []string            `json:"task_fields"`
	StringFields []string            `json:"string_fields"`
	Strings      []string            `json:"strings"`
	Encoded      [][]json.RawMessage `json:"samples_encoded"`
}

// LoadSeries reads a recorded series by file name without ".json", e.g.
// "05b_javascript_active_tasks_series" or "06_cluster_50k_javascript_active_tasks_series".
// A series stored in parts (<name>_part1of2.json, <name>_part2of2.json) loads whole under
// its name, e.g. "06_cluster_javascript_active_tasks_series".
func LoadSeries(name string) (Series, error) {
	name = strings.TrimSuffix(name, ".json")
	files, err := seriesFiles(name)
	if err != nil {
		return Series{}, err
	}
	s := Series{Name: name}
	for i, file := range files {
		part, err := readSeries(file)
		if err != nil {
			return Series{}, fmt.Errorf("series %s: %w", file, err)
		}
		if i > 0 && part.ViewRequest != s.ViewRequest {
			return Series{}, fmt.Errorf("series %s: its view_request differs from the first part's", file)
		}
		s.ViewRequest = part.ViewRequest
		s.Samples = append(s.Samples, part.Samples...)
	}
	return s, nil
}

// seriesFiles finds the file of a series, or its parts in order.
func seriesFiles(name string) ([]string, error) {
	if !fs.ValidPath(name) || strings.Contains(name, "/") {
		return nil, fmt.Errorf("series %q: not a series name", name)
	}
	whole := "testdata/" + name + ".json"
	if _, err := fs.Stat(series, whole); err == nil {
		return []string{whole}, nil
	}
	parts, err := fs.Glob(series, "testdata/"+name+"_part*of*.json")
	if err != nil || len(parts) == 0 {
		return nil, fmt.Errorf("series %q: no such recording in couchdbtest's testdata", name)
	}
	numbers := make(map[string]int, len(parts))
	for _, p := range parts {
		var k, n int
		if _, err := fmt.Sscanf(strings.TrimPrefix(path.Base(p), name+"_part"), "%dof%d.json", &k, &n); err != nil || n != len(parts) {
			return nil, fmt.Errorf("series %q: unexpected part file %s", name, p)
		}
		numbers[p] = k
	}
	slices.SortFunc(parts, func(a, b string) int { return numbers[a] - numbers[b] })
	for i, p := range parts {
		if numbers[p] != i+1 {
			return nil, fmt.Errorf("series %q: part %d is missing", name, i+1)
		}
	}
	return parts, nil
}

func readSeries(file string) (Series, error) {
	data, err := series.ReadFile(file)
	if err != nil {
		return Series{}, err
	}
	var f seriesFile
	if err := json.Unmarshal(data, &f); err != nil {
		return Series{}, err
	}
	vr := f.ViewRequest
	s := Series{ViewRequest: ViewRequest{Path: vr.Path, Status: vr.Status, StartRelMs: vr.StartRel, EndRelMs: vr.EndRel, ElapsedS: vr.Elapsed}}
	for _, p := range f.Samples {
		s.Samples = append(s.Samples, Sample{TRelMs: p.TRel, RTTMs: p.RTT, Status: p.Status, Body: compact(p.Body)})
	}
	for i, enc := range f.Encoded {
		sample, err := f.decode(enc)
		if err != nil {
			return Series{}, fmt.Errorf("samples_encoded[%d]: %w", i, err)
		}
		s.Samples = append(s.Samples, sample)
	}
	if len(s.Samples) == 0 {
		return Series{}, errors.New("no samples")
	}
	return s, nil
}

// decode turns one encoded sample, [t_rel_ms, rtt_ms, status, rows], back into the response:
// each row lists a task's values in task_fields order; "-" stands for a field the task did
// not have (trailing ones are left off); in string_fields an integer is an index into
// strings. The encoding drops the members' order; taskOrder restores CouchDB's.
func (f *seriesFile) decode(enc []json.RawMessage) (Sample, error) {
	if len(enc) != 4 {
		return Sample{}, fmt.Errorf("%d elements, want 4", len(enc))
	}
	var s Sample
	var rows [][]json.RawMessage
	for i, dst := range []any{&s.TRelMs, &s.RTTMs, &s.Status, &rows} {
		if err := json.Unmarshal(enc[i], dst); err != nil {
			return Sample{}, err
		}
	}
	tasks := make([]object, 0, len(rows))
	for _, row := range rows {
		if len(row) > len(f.TaskFields) {
			return Sample{}, fmt.Errorf("a row of %d values for %d task fields", len(row), len(f.TaskFields))
		}
		task := object{}
		for i, v := range row {
			field := f.TaskFields[i]
			if string(v) == `"-"` {
				continue
			}
			if slices.Contains(f.StringFields, field) && isInteger(v) {
				idx, err := strconv.Atoi(string(v))
				if err != nil || idx < 0 || idx >= len(f.Strings) {
					return Sample{}, fmt.Errorf("string index %s out of range", v)
				}
				v = marshal(f.Strings[idx])
			}
			task = append(task, member{field, compact(v)})
		}
		slices.SortStableFunc(task, func(a, b member) int { return taskOrder(a.key, b.key) })
		tasks = append(tasks, task)
	}
	s.Body = marshal(tasks)
	return s, nil
}

// taskOrder is the member order of every task object in the plain recordings (1489 of
// them): node, pid and process_status first, then the rest alphabetically.
func taskOrder(a, b string) int {
	rank := func(k string) int {
		if i := slices.Index([]string{"node", "pid", "process_status"}, k); i >= 0 {
			return i
		}
		return 3
	}
	if ra, rb := rank(a), rank(b); ra != rb {
		return ra - rb
	}
	return strings.Compare(a, b)
}

func isInteger(v json.RawMessage) bool {
	v = bytes.TrimPrefix(v, []byte("-"))
	if len(v) == 0 {
		return false
	}
	for _, c := range v {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// member is one member of a JSON object, and object an object whose members keep their
// order: CouchDB's answers list a task's members in an order a Go map would lose.
type member struct {
	key   string
	value json.RawMessage // compact
}

type object []member

// MarshalJSON writes the members in order, compact.
func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(marshal(m.key))
		b.WriteByte(':')
		b.Write(m.value)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// marshal is compact JSON without Go's HTML escaping, as CouchDB writes it. It is only
// called on values built here, which always encode.
func marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic("couchdbtest: cannot encode " + err.Error())
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// compact is only given JSON that a decoder already accepted, so it cannot fail; the
// fallback keeps the value as it came.
func compact(raw []byte) json.RawMessage {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return raw
	}
	return b.Bytes()
}

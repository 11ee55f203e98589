package compare

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/results"
)

// specDifferences splits what differs between the runs' specs (defaults applied) into what
// refuses the comparison — the dataset and the workloads, which make the numbers what they
// are — and the rest, which is listed.
func specDifferences(base, cur *results.Document) (refused, listed []string, err error) {
	b, err := generic(base.Spec)
	if err != nil {
		return nil, nil, err
	}
	c, err := generic(cur.Spec)
	if err != nil {
		return nil, nil, err
	}
	for _, d := range diff("spec", b, c) {
		// What a run is compared against says nothing about how it ran, and in a schedule's
		// series each run names the one before: listing it would be noise in every summary.
		if underPath(d, "spec.baseline") {
			continue
		}
		// k6 thresholds judge the read load; they change no number, so they do not refuse.
		if (underPath(d, "spec.dataset") || underPath(d, "spec.workloads")) && !underPath(d, "spec.workloads.reads.thresholds") {
			refused = append(refused, d)
		} else {
			listed = append(listed, d)
		}
	}
	return refused, listed, nil
}

func underPath(line, path string) bool {
	rest, ok := strings.CutPrefix(line, path)
	return ok && (strings.HasPrefix(rest, ".") || strings.HasPrefix(rest, "[") || strings.HasPrefix(rest, ":"))
}

// armView is what one arm ran on, beyond its spec: the CouchDB that answered (the operator
// installs one per arm), the query server that really ran its views, and each profile's
// shard layout. The server's URL is left out: it names a per-run release, and the spec's
// couchdb section already says where an existing CouchDB is.
type armView struct {
	Vendor   string            `json:"vendor"`
	Version  string            `json:"version"`
	GitSHA   string            `json:"gitSha,omitempty"`
	Nodes    int               `json:"nodes"`
	Runtime  *results.Runtime  `json:"runtime,omitempty"`
	Profiles map[string]layout `json:"profiles,omitempty"`
}

type layout struct {
	Shards   int `json:"shards"`
	Replicas int `json:"replicas"`
}

func armViews(docs []*results.Document) map[string]armView {
	out := map[string]armView{}
	for _, d := range docs {
		for _, a := range d.Arms {
			srv := d.ServerOf(a)
			v := armView{Vendor: srv.Vendor, Version: srv.Version, GitSHA: srv.GitSHA,
				Nodes: len(srv.Nodes), Runtime: a.Runtime, Profiles: map[string]layout{}}
			for _, p := range a.Profiles {
				v.Profiles[p.Profile] = layout{Shards: p.Shards, Replicas: p.Replicas}
			}
			out[a.QueryServer] = v
		}
	}
	return out
}

// armDifferences lists how the arms both runs have differ in what they ran on, one line per
// difference with the arms it applies to: "arms[js, qjs].version: 3.4.3 vs 3.5.1". Arms of
// one run only show in the spec's differences.
func armDifferences(base, cur []*results.Document, order []string) ([]string, error) {
	bv, cv := armViews(base), armViews(cur)
	var lines []string
	arms := map[string][]string{}
	for _, name := range order {
		b, inBase := bv[name]
		c, inCur := cv[name]
		if !inBase || !inCur {
			continue
		}
		gb, err := generic(b)
		if err != nil {
			return nil, err
		}
		gc, err := generic(c)
		if err != nil {
			return nil, err
		}
		for _, d := range diff("", gb, gc) {
			if arms[d] == nil {
				lines = append(lines, d)
			}
			arms[d] = append(arms[d], name)
		}
	}
	out := make([]string, len(lines))
	for i, d := range lines {
		// diff's paths start with "." or "[" under the empty root.
		out[i] = "arms[" + strings.Join(arms[d], ", ") + "]" + d
	}
	return out, nil
}

// generic is v as encoding/json sees it: maps, lists, json.Numbers (exact, unlike float64
// for an int64 seed), strings, booleans and nil. Diffing that names fields as the YAML does.
func generic(v any) (any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		// Only a spec's free-form Helm values can fail: raw JSON that is not JSON.
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var out any
	err = dec.Decode(&out)
	return out, err
}

// diff lists where a and b differ, as "path: a vs b". Objects are followed field by field;
// lists of objects with a name (queryServers, env) are matched by name, as the API's
// listMapKey does; other lists are compared whole, order included (it is the order the
// steps ran in).
func diff(path string, a, b any) []string {
	am, aIsMap := a.(map[string]any)
	bm, bIsMap := b.(map[string]any)
	if aIsMap && bIsMap {
		return diffEach(am, bm, func(k string) string { return path + "." + k })
	}
	if an, ok := named(a); ok {
		if bn, ok := named(b); ok {
			return diffEach(an, bn, func(k string) string { return path + "[" + k + "]" })
		}
	}
	if reflect.DeepEqual(a, b) {
		return nil
	}
	return []string{fmt.Sprintf("%s: %s vs %s", path, show(a), show(b))}
}

// diffEach diffs the entries of a and b, key by key in order, each under its own path.
func diffEach(a, b map[string]any, path func(key string) string) []string {
	keys := unionKeys(a, b)
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, diff(path(k), a[k], b[k])...)
	}
	return out
}

// named is a list whose every element is an object with a string "name", keyed by it.
func named(v any) (map[string]any, bool) {
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		return nil, false
	}
	out := map[string]any{}
	for _, e := range list {
		obj, ok := e.(map[string]any)
		if !ok {
			return nil, false
		}
		name, ok := obj["name"].(string)
		if !ok {
			return nil, false
		}
		out[name] = obj
	}
	return out, true
}

func unionKeys(a, b map[string]any) []string {
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

// show prints a value as a person reads it: strings bare, "unset" for an absent field,
// objects and lists as compact JSON.
func show(v any) string {
	switch v := v.(type) {
	case nil:
		return "unset"
	case string:
		if v == "" {
			return `""`
		}
		return v
	default:
		// Unescaped, so that a threshold reads "p(95)<500", not "p(95)\u003c500".
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(v) // v came from json.Decode: it encodes
		return strings.TrimSuffix(b.String(), "\n")
	}
}

// Refusals are what would refuse comparing runs of two specs: every dataset or workload field
// that differs, "spec.dataset.documents: 100000 vs 20000". None: their runs can be compared.
// Checked before a run starts, it spares a run whose verdict could never be given.
func Refusals(base, current benchv1.CouchBenchmarkSpec) ([]string, error) {
	refused, _, err := specDifferences(&results.Document{Spec: base}, &results.Document{Spec: current})
	return refused, err
}

package results

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
)

// Merge adds what one step measured (a document holding only that step's results, as a Job
// hands it over) to a run's document. Each step owns its own parts of a profile (seeding,
// indexing, view reads, writes, reads), so merging the same step again changes nothing: a
// restarted operator that reads a finished Job twice stores the same document.
func Merge(into, step *Document) {
	if into.Benchmark == "" {
		into.SchemaVersion, into.Benchmark, into.SpecHash, into.Spec, into.RunID, into.Seed =
			step.SchemaVersion, step.Benchmark, step.SpecHash, step.Spec, step.RunID, step.Seed
	}
	if into.StartedAt.IsZero() || (!step.StartedAt.IsZero() && step.StartedAt.Before(into.StartedAt)) {
		into.StartedAt = step.StartedAt
	}
	if step.FinishedAt.After(into.FinishedAt) {
		into.FinishedAt = step.FinishedAt
	}
	if step.Server.Version != "" {
		into.Server = step.Server
	}
	into.Error, into.Interrupted = step.Error, step.Interrupted
	// Curves thinned in the step stay thinned in the whole.
	into.SeriesThinned = max(into.SeriesThinned, step.SeriesThinned)
	for _, sa := range step.Arms {
		a := armOf(into, sa.QueryServer)
		if sa.Language != "" {
			a.Language = sa.Language
		}
		if sa.Runtime != nil {
			a.Runtime = sa.Runtime
		}
		if sa.Cluster != nil {
			a.Cluster = mergeCluster(a.Cluster, sa.Cluster)
		}
		for _, sp := range sa.Profiles {
			p := profileOf(a, sp)
			if sp.Seeding != nil {
				p.Seeding, p.SeedingRuns = sp.Seeding, sp.SeedingRuns
				p.SeedingDocsPerSecond, p.SeedingMBPerSecond = sp.SeedingDocsPerSecond, sp.SeedingMBPerSecond
			}
			if len(sp.Indexing) > 0 {
				p.Indexing = sp.Indexing
			}
			if len(sp.ViewReads) > 0 {
				p.ViewReads = sp.ViewReads
			}
			if len(sp.Writes) > 0 || len(sp.WritesWarmUp) > 0 {
				p.Writes, p.WritesWarmUp = sp.Writes, sp.WritesWarmUp
			}
			if sp.Reads != nil {
				p.Reads = sp.Reads
			}
		}
	}
	for _, rec := range step.Steps {
		replaced := false
		for i := range into.Steps {
			if into.Steps[i].QueryServer == rec.QueryServer && into.Steps[i].Step == rec.Step {
				into.Steps[i], replaced = rec, true
			}
		}
		if !replaced {
			into.Steps = append(into.Steps, rec)
		}
	}
}

// ArmDocument is the part of a step's document that is one arm's: its results and its step
// records, a shallow copy of the step's.
func ArmDocument(step *Document, arm string) *Document {
	d := *step
	d.Arms, d.Steps = nil, nil
	for _, a := range step.Arms {
		if a.QueryServer == arm {
			if a.Server != nil {
				d.Server, a.Server = *a.Server, nil
			}
			d.Arms = append(d.Arms, a)
		}
	}
	for _, rec := range step.Steps {
		if rec.QueryServer == arm {
			d.Steps = append(d.Steps, rec)
		}
	}
	return &d
}

// mergeCluster adds a step's pods and nodes to what the arm's earlier steps saw; a pod or a
// node seen again replaces its entry.
func mergeCluster(into, step *Cluster) *Cluster {
	if into == nil {
		into = &Cluster{}
	}
	for _, v := range []struct {
		to   *string
		from string
	}{{&into.KubernetesVersion, step.KubernetesVersion}, {&into.Operator, step.Operator}, {&into.Chart, step.Chart}} {
		if v.from != "" {
			*v.to = v.from
		}
	}
	for _, p := range step.Pods {
		i := slices.IndexFunc(into.Pods, func(q PodRun) bool { return q.Pod == p.Pod })
		if i < 0 {
			into.Pods = append(into.Pods, p)
		} else {
			into.Pods[i] = p
		}
	}
	for _, n := range step.Nodes {
		i := slices.IndexFunc(into.Nodes, func(m NodeRun) bool { return m.Name == n.Name })
		if i < 0 {
			into.Nodes = append(into.Nodes, n)
		} else {
			into.Nodes[i] = n
		}
	}
	return into
}

func armOf(d *Document, name string) *Arm {
	for i := range d.Arms {
		if d.Arms[i].QueryServer == name {
			return &d.Arms[i]
		}
	}
	d.Arms = append(d.Arms, Arm{QueryServer: name})
	return &d.Arms[len(d.Arms)-1]
}

func profileOf(a *Arm, like Profile) *Profile {
	for i := range a.Profiles {
		if a.Profiles[i].Profile == like.Profile {
			return &a.Profiles[i]
		}
	}
	a.Profiles = append(a.Profiles, Profile{Profile: like.Profile, DB: like.DB, Shards: like.Shards, Replicas: like.Replicas})
	return &a.Profiles[len(a.Profiles)-1]
}

// Encode is the document as gzip-compressed JSON: how Jobs hand documents over and how the
// operator stores them (JSON with time series compresses about tenfold).
func Encode(d *Document) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if err := json.NewEncoder(zw).Encode(d); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// EncodeWithin encodes the document in at most limit bytes. A document too large keeps
// every number but draws its /_active_tasks curves with every second point, then every
// fourth, ..., and says so in SeriesThinned.
func EncodeWithin(d *Document, limit int) ([]byte, error) {
	for {
		data, err := Encode(d)
		if err != nil || len(data) <= limit {
			return data, err
		}
		if !d.thinSeries() {
			return nil, fmt.Errorf("the results document takes %d bytes compressed, more than the %d that fit, "+
				"even without its time series", len(data), limit)
		}
	}
}

// thinSeries halves every indexing curve; false when none has points left to drop.
func (d *Document) thinSeries() bool {
	thinned := false
	for a := range d.Arms {
		for p := range d.Arms[a].Profiles {
			for s := range d.Arms[a].Profiles[p].Indexing {
				runs := d.Arms[a].Profiles[p].Indexing[s].Runs
				for r := range runs {
					if n := len(runs[r].Series); n > 2 {
						kept := runs[r].Series[:0:0]
						for i, pt := range runs[r].Series {
							if i%2 == 0 || i == n-1 {
								kept = append(kept, pt)
							}
						}
						runs[r].Series = kept
						thinned = true
					}
				}
			}
		}
	}
	if thinned {
		d.SeriesThinned = max(d.SeriesThinned, 1) * 2
	}
	return thinned
}

// Decode reads one document: JSON, or gzip-compressed JSON. It refuses other schema versions.
func Decode(data []byte) (*Document, error) {
	if isGzip(data) {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, err
		}
		if data, err = io.ReadAll(zr); err != nil {
			return nil, fmt.Errorf("decompressing: %w", err)
		}
	}
	var d Document
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("not a results document: %w", err)
	}
	if d.SchemaVersion != SchemaVersion {
		return nil, fmt.Errorf("results schema version %d, this couchbench reads version %d", d.SchemaVersion, SchemaVersion)
	}
	return &d, nil
}

// configMapShape is what is read of a ConfigMap, or of a list of them, as kubectl prints them.
type configMapShape struct {
	Kind       string            `json:"kind"`
	BinaryData map[string][]byte `json:"binaryData"`
	Items      []configMapShape  `json:"items"`
}

// ReadDocuments reads what `couchbench report` is given: a document (JSON or gzip), or
// ConfigMaps holding documents as kubectl prints them (`kubectl get cm -o json` or `-o yaml`:
// one ConfigMap, a List, or several YAML documents).
func ReadDocuments(data []byte, name string) ([]*Document, error) {
	trimmed := bytes.TrimSpace(data)
	if shapes, ok := configMaps(trimmed); ok {
		var docs []*Document
		for _, shape := range shapes {
			more, err := shape.documents()
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			docs = append(docs, more...)
		}
		if len(docs) == 0 {
			return nil, fmt.Errorf("%s: no ConfigMap holds a results document (%s); list them with "+
				"kubectl get cm -l %s=BENCHMARK -o json (or -o yaml)", name, benchv1.DocumentKey, benchv1.LabelResultsOf)
		}
		return docs, nil
	}
	if !isGzip(trimmed) && !bytes.HasPrefix(trimmed, []byte("{")) {
		return nil, fmt.Errorf("%s: neither a results document (JSON, gzip-compressed or not) nor ConfigMaps as "+
			"kubectl get cm -o json or -o yaml prints them", name)
	}
	d, err := Decode(trimmed)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return []*Document{d}, nil
}

// configMaps reads data as kubectl's print of ConfigMaps, JSON or YAML (several YAML
// documents too); ok is false when it is something else, such as a results document.
func configMaps(data []byte) (shapes []configMapShape, ok bool) {
	if isGzip(data) {
		return nil, false
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var shape configMapShape
		switch err := dec.Decode(&shape); {
		case errors.Is(err, io.EOF):
			return shapes, len(shapes) > 0
		case err != nil:
			return nil, false
		case shape.Kind == "":
			// an empty YAML document (a leading "---"), or not kubectl's
		case shape.Kind == "ConfigMap" || strings.HasSuffix(shape.Kind, "List"):
			shapes = append(shapes, shape)
		default:
			return nil, false
		}
	}
}

func (c configMapShape) documents() ([]*Document, error) {
	var docs []*Document
	if data, ok := c.BinaryData[benchv1.DocumentKey]; ok {
		d, err := Decode(data)
		if err != nil {
			return nil, err
		}
		docs = append(docs, d)
	}
	for _, item := range c.Items {
		more, err := item.documents()
		if err != nil {
			return nil, err
		}
		docs = append(docs, more...)
	}
	return docs, nil
}

// ReadFile reads documents from a file, or from standard input for "-".
func ReadFile(path string, stdin io.Reader) ([]*Document, error) {
	var data []byte
	var err error
	if path == "-" {
		data, err = io.ReadAll(stdin)
		path = "standard input"
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New(path + ": empty")
	}
	return ReadDocuments(data, path)
}

// StartedAt is the earliest start of the documents.
func StartedAt(docs []*Document) time.Time {
	var t time.Time
	for _, d := range docs {
		if t.IsZero() || (!d.StartedAt.IsZero() && d.StartedAt.Before(t)) {
			t = d.StartedAt
		}
	}
	return t
}

package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/ddoc"
	"github.com/couchbench/couchbench/internal/names"
	"github.com/couchbench/couchbench/internal/results"
	"github.com/couchbench/couchbench/internal/seeding"
)

// probeArms asks, before the first step, what runs each arm's views (when the workloads use
// views), and holds it to what the arm asks for: a preset, an engine or a command can be
// wrong about what a CouchDB runs (the kit's python is couchpy decoding with simplejson, so
// a pypy arm against it measures CPython), and an arm measured on the wrong runtime carries
// a wrong name on every number. Such an arm is stopped (spec.runtimeMismatch Stop: it takes
// no turn in any step, and the others go on) or measured anyway and flagged (Flag).
//
// Every runner asks, every part of a shared step too, each in a database of its own: the
// parts must agree on which arms they run without a word to each other, and one CouchDB
// gives each of them the same answer. A step run on its own (a Job, or by hand) asks again,
// so that it never measures an arm its seed step stopped.
func probeArms(ctx context.Context, cfg Config, arms []*armRun) error {
	w := cfg.Bench.Spec.Workloads
	if w.Indexing == nil && w.ViewReads == nil && w.Reads == nil {
		return nil
	}
	for _, a := range arms {
		rt, err := a.probe(ctx)
		if err != nil {
			return fmt.Errorf("query server %s: %w", a.qs.Name, err)
		}
		a.result.Runtime = rt
		logf(cfg.Log, "%s: views in %s run on %s", a.qs.Name, rt.Language, rt)
		if rt.Mismatch != "" {
			what := "measured anyway, every number flagged RuntimeMismatch (spec.runtimeMismatch: Flag)"
			if rt.Stopped {
				what = "stopped, it measures nothing"
			}
			logf(cfg.Log, "%s: %s: it %s", a.qs.Name, what, rt.Mismatch)
		}
	}
	return nil
}

// probe asks the arm's CouchDB what runs its views: a view in the arm's language, over a
// database of its own with one document, reports its interpreter (the JavaScript engine's
// version comes from /_node/_local/_versions); then holds that to what the arm asks for. It
// is the first thing an arm asks of its CouchDB, so it rides out a node's restart as seeding
// does: a one-copy database is unusable while its node is away ("No DB shards could be
// opened"), and the probe starts over.
func (a *armRun) probe(ctx context.Context) (*results.Runtime, error) {
	db := names.ProbeDatabase(a.cfg.Bench.Name, a.cfg.RunID, a.qs.Name, a.cfg.Part)
	var rt *results.Runtime
	tries, _, err := seeding.DefaultRetry.Do(ctx, couch.Transient, func() (err error) {
		rt, err = a.probeOnce(ctx, db)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("asking CouchDB what runs %s views (database %s, %d tries): %w", a.language, db, tries, err)
	}
	a.judge(rt)
	return rt, nil
}

func (a *armRun) probeOnce(ctx context.Context, db string) (*results.Runtime, error) {
	c := a.client
	if err := c.RecreateDB(ctx, db, 1, 1); err != nil {
		return nil, err
	}
	defer func() { _, _ = c.DeleteDB(context.WithoutCancel(ctx), db) }()
	if _, err := c.BulkDocs(ctx, db, []json.RawMessage{json.RawMessage(`{"_id":"probe"}`)}); err != nil {
		return nil, err
	}
	doc, err := ddoc.ProbeDoc(names.ProbeDesignDoc, a.language)
	if err != nil {
		return nil, err
	}
	if err := c.PutDesignDoc(ctx, db, doc); err != nil {
		return nil, err
	}
	rows, err := c.QueryView(ctx, db, names.ProbeDesignDoc, ddoc.Probe, url.Values{})
	if err != nil {
		return nil, err
	}
	if len(rows) != 1 {
		return nil, fmt.Errorf("the probe view gave %d rows, want 1", len(rows))
	}
	var engine string
	var value struct {
		Version string `json:"version"`
		JSON    string `json:"json"`
	}
	if err := json.Unmarshal(rows[0].Key, &engine); err != nil {
		return nil, fmt.Errorf("probe row key %s: %w", rows[0].Key, err)
	}
	if err := json.Unmarshal(rows[0].Value, &value); err != nil {
		return nil, fmt.Errorf("probe row value %s: %w", rows[0].Value, err)
	}
	rt := &results.Runtime{Language: a.language, Engine: engine, Version: value.Version, JSONModule: value.JSON}
	if rt.Version == "" {
		if v, err := c.Versions(ctx); err == nil && strings.EqualFold(v.JavaScriptEngine.Name, engine) {
			rt.Version = v.JavaScriptEngine.Version
		}
	}
	return rt, nil
}

// judge holds what ran the arm's views to what the arm asks for (its preset's engine or
// implementation, its engine, the JSON module its command names) and, when they differ,
// records what was asked, what ran and how to make the server run what was asked, and
// whether the arm stops.
func (a *armRun) judge(rt *results.Runtime) {
	engine, module := a.qs.AskedRuntime()
	var asked []string
	if engine != "" {
		asked = append(asked, engine)
	}
	if module != "" {
		asked = append(asked, "JSON module "+module)
	}
	rt.Asked = strings.Join(asked, " with ")
	if (engine == "" || strings.EqualFold(engine, rt.Engine)) && (module == "" || module == rt.JSONModule) {
		return
	}
	var by []string
	if a.qs.Preset != "" {
		by = append(by, "preset "+string(a.qs.Preset))
	}
	if a.qs.Engine != "" && a.qs.Preset == "" {
		by = append(by, "engine "+string(a.qs.Engine))
	}
	if module != "" {
		by = append(by, fmt.Sprintf("command %q", a.qs.Command))
	}
	ran := strings.TrimSpace(rt.Engine + " " + rt.Version)
	if rt.JSONModule != "" {
		ran += " with JSON module " + rt.JSONModule
	}
	rt.Mismatch = fmt.Sprintf("asks for %s (%s), but the CouchDB at %s runs its %s views on %s: to run %s, %s",
		rt.Asked, strings.Join(by, ", "), a.client.URL(), rt.Language, ran, rt.Asked,
		howToRun(a.qs, a.language, engine, a.cfg.Bench.Spec.CouchDB.Provision != nil))
	rt.Stopped = a.cfg.Bench.Spec.RuntimeMismatch != benchv1.RuntimeMismatchFlag
	if rt.Stopped {
		rt.Mismatch += "; or set spec.runtimeMismatch: Flag to measure it anyway, every number flagged RuntimeMismatch"
	}
}

// pypyCommand runs couchpy (PyPI CouchDB 1.2) under PyPy, as the pypy preset's image
// registers it.
const pypyCommand = "pypy3 -m couchdb.view"

// howToRun says how to make a CouchDB run the query server qs asks for its language: for
// JavaScript, the server's js_engine; for an external language, the command registered for it
// (the arm's own, else PyPy's for a PyPy arm), which a provisioned CouchDB gets from the arm's
// image or command. On an existing CouchDB (spec.couchdb.existing) a preset's image provisions
// nothing, so the message leaves it out.
func howToRun(qs benchv1.QueryServer, language, engine string, provisioned bool) string {
	if strings.HasPrefix(language, "javascript") {
		return fmt.Sprintf("set js_engine = %s in the [couchdb] section of that CouchDB's ini (CouchDB 3.4 or later) and restart it", engine)
	}
	command := qs.Command
	if command == "" && engine == benchv1.PythonPyPy {
		command = pypyCommand
	}
	how := fmt.Sprintf("register it for language %s on that CouchDB: COUCHDB_QUERY_SERVER_%s=%q in CouchDB's environment "+
		"(or %s = %s in the [query_servers] section of its ini), then restart it", language, strings.ToUpper(language), command, language, command)
	if provisioned && qs.Image != "" {
		how += fmt.Sprintf("; a provisioned CouchDB gets it from the arm's image, %s, or from queryServers[].command", qs.Image)
	}
	return how
}

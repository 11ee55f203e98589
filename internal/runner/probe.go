package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/couchbench/couchbench/internal/ddoc"
	"github.com/couchbench/couchbench/internal/names"
	"github.com/couchbench/couchbench/internal/results"
	"github.com/couchbench/couchbench/internal/seeding"
)

// probe asks the arm's CouchDB what runs its views: a view in the arm's language, over a
// database of its own with one document, reports its interpreter (the JavaScript engine's
// version comes from /_node/_local/_versions). A preset or a registered command can be
// wrong about what runs; this cannot. It is the first thing an arm asks of its CouchDB, so
// it rides out a node's restart as seeding does: a one-copy database is unusable while its
// node is away ("No DB shards could be opened"), and the probe starts over.
func (a *armRun) probe(ctx context.Context) (*results.Runtime, error) {
	db := names.Database(a.cfg.Bench.Name, a.cfg.RunID, a.qs.Name, "probe")
	var rt *results.Runtime
	retries, err := seeding.DefaultBackoff.Do(ctx, func() (err error) {
		rt, err = a.probeOnce(ctx, db)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("asking CouchDB what runs %s views (database %s, %d tries): %w", a.language, db, retries+1, err)
	}
	return rt, nil
}

func (a *armRun) probeOnce(ctx context.Context, db string) (*results.Runtime, error) {
	c := a.client
	if _, err := c.DeleteDB(ctx, db); err != nil {
		return nil, err
	}
	if _, err := c.CreateDB(ctx, db, 1, 1); err != nil {
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

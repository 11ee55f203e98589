package runner

// The whole runner against pouchdb-server: a real third-party HTTP server that speaks
// CouchDB's API and runs JavaScript views (it is not CouchDB: it has no indexer tasks, no
// statistics and no config API, and its timings are its own). What this proves is the
// runner's HTTP behaviour and that the generated dataset's expected view answer equals what a
// real view engine computes from the seeded documents.

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/couchbench/couchbench/internal/benchspec"
	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/pouchdbtest"
	"github.com/couchbench/couchbench/internal/results"
)

const pouchBench = `
apiVersion: bench.couchbench.io/v1alpha1
kind: CouchBenchmark
metadata: {name: pouch}
spec:
  couchdb:
    existing: {url: "http://unused:5984", credentialsSecret: {name: s}}
  queryServers:
  - {name: js, language: javascript}
  dataset:
    documents: 1500
    batchSize: 200
    concurrency: 3
    profiles: [{type: small}, {type: large, targetBytes: 2000}]
  workloads:
    indexing:
      reducers: [builtin, custom]
      repetitions: 2
      viewCompaction: Allowed   # pouchdb-server has no config API to pause it
    viewReads:
      repetitions: 2
    writes:
      duration: 1s
      bulkBatchSizes: [100]
      parallelBulk: {clients: 2, batchSize: 50}
      batchOk: {clients: 2}
      serial: true
`

func TestRunAgainstPouchDBServer(t *testing.T) {
	url := pouchdbtest.Start(t)
	bench, err := benchspec.Parse([]byte(pouchBench))
	if err != nil {
		t.Fatal(err)
	}
	client, err := couch.New(url, couch.Credentials{Username: pouchdbtest.AdminUser, Password: pouchdbtest.AdminPassword}, couch.Options{MaxConns: 8})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var log bytes.Buffer
	doc, err := Run(ctx, Config{Bench: bench, Client: client, Steps: AllSteps, RunID: "t1", Log: &log, PollInterval: 50 * time.Millisecond})
	t.Log(log.String())
	if err != nil {
		t.Fatalf("run failed: %v", err)
	}

	if doc.Server.Vendor != "PouchDB authors" {
		t.Errorf("provenance vendor %q: the results must name the server that produced them", doc.Server.Vendor)
	}
	if len(doc.Arms) != 1 || len(doc.Arms[0].Profiles) != 2 {
		t.Fatalf("arms/profiles: %+v", doc.Arms)
	}
	for _, p := range doc.Arms[0].Profiles {
		if p.Seeding == nil || p.Seeding.Stored != 1500 || p.Seeding.Created != 1500 || p.Seeding.Failed != 0 {
			t.Errorf("%s: seeding %+v, want 1500 created", p.Profile, p.Seeding)
		}
		info, err := client.DBInfo(ctx, p.DB)
		if err != nil {
			t.Fatal(err)
		}
		// 1500 documents plus the design documents of 2 reducers x 2 runs and the view reads.
		if info.DocCount != 1500+4+1 {
			t.Errorf("%s: %s holds %d documents, want 1505", p.Profile, p.DB, info.DocCount)
		}
		if len(p.Indexing) != 2 {
			t.Fatalf("%s: %d indexing series, want 2", p.Profile, len(p.Indexing))
		}
		for _, s := range p.Indexing {
			if len(s.Runs) != 2 || s.ViewCompaction != "allowed" || s.Stats.N != 2 || s.Stats.Min > s.Stats.Max {
				t.Errorf("%s/%s: %d runs, compaction %q", p.Profile, s.Reducer, len(s.Runs), s.ViewCompaction)
			}
			for _, r := range s.Runs {
				// No indexer tasks on this server: built is queryable, and the numbers say so.
				if r.TasksObserved || r.Built != r.Queryable || r.DocsPerSecond <= 0 || r.MapDocs != -1 {
					t.Errorf("%s/%s run: %+v", p.Profile, s.Reducer, r)
				}
			}
		}
		if len(p.ViewReads) != 3 {
			t.Errorf("%s: %d view reads, want 3", p.Profile, len(p.ViewReads))
		}
		for _, vr := range p.ViewReads {
			if len(vr.Reads) != 2 || vr.Reads[0].Rows != 1500 {
				t.Errorf("%s/%s: %+v", p.Profile, vr.View, vr.Reads)
			}
		}
		if len(p.Writes) != 4 {
			t.Fatalf("%s: %d write modes, want 4", p.Profile, len(p.Writes))
		}
		for _, w := range p.Writes {
			acked := w.Created + w.Accepted
			if acked == 0 || w.Errors != 0 || w.Stored != acked {
				t.Errorf("%s/%s: %+v: every acknowledged document must be stored", p.Profile, w.Mode, w)
			}
		}
	}
	var table bytes.Buffer
	if err := results.WriteMarkdown(&table, doc.Report().Tables()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "| js (javascript) | builtin") {
		t.Errorf("results table:\n%s", table.String())
	}
}

// A step that needs the dataset fails with what to do when it is not there.
func TestIndexWithoutSeedSaysSo(t *testing.T) {
	url := pouchdbtest.Start(t)
	bench, err := benchspec.Parse([]byte(pouchBench))
	if err != nil {
		t.Fatal(err)
	}
	client, err := couch.New(url, couch.Credentials{Username: pouchdbtest.AdminUser, Password: pouchdbtest.AdminPassword}, couch.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	doc, err := Run(ctx, Config{Bench: bench, Client: client, Steps: []Step{StepIndex}})
	if err == nil || !strings.Contains(err.Error(), "run the seed step first") {
		t.Fatalf("index before seed: %v", err)
	}
	if doc == nil || doc.Error == "" || doc.Server.Vendor == "" {
		t.Errorf("the document must keep the error and the provenance: %+v", doc)
	}
}

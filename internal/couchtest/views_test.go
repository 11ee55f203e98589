package couchtest_test

// Tests of internal/couchtest itself, the in-repo fake (not CouchDB), against the
// recordings of CouchDB 3.4.3 it is built on.

import (
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/couchbench/couchbench/internal/couchtest"
)

// seedBenchViews recreates the 04_* fixtures' database: the 40 documents (testdata/README.md,
// DERIVED) and _design/scores as recorded. It returns this server's revision of each doc.
func seedBenchViews(t *testing.T, s *couchtest.Server) map[string]string {
	t.Helper()
	docs, err := os.ReadFile("testdata/derived_04_bench_views_docs.json")
	if err != nil {
		t.Fatal(err)
	}
	do(t, s, http.MethodPut, "/bench_views", nil)
	got := do(t, s, http.MethodPost, "/bench_views/_bulk_docs", docs)
	var results []struct{ ID, Rev string }
	if err := json.Unmarshal(got.body, &results); err != nil || len(results) != 40 {
		t.Fatalf("seeding: %d %s", got.status, got.body)
	}
	revs := map[string]string{}
	for _, r := range results {
		revs[r.ID] = r.Rev
	}
	fx := loadFixture(t, "04_put_ddoc_js_201")
	put := do(t, s, http.MethodPut, fx.Request.Path, fx.requestBody())
	checkShape(t, "04_put_ddoc_js_201", put, fx, "rev")
	if loc := put.header.Get("Location"); loc != s.URL+"/bench_views/_design%2Fscores" {
		t.Errorf("Location %s", loc)
	}
	return revs
}

func TestViewsAsRecorded(t *testing.T) {
	s := couchtest.New(t)
	revs := seedBenchViews(t, s)
	checkShape(t, "04_get_ddoc_200", do(t, s, http.MethodGet, "/bench_views/_design/scores", nil), loadFixture(t, "04_get_ddoc_200"), "_rev")

	// In the recorded order; the first query builds the index.
	for _, name := range []string{
		"04_view_limit0_reduce",
		"04_view_limit0_reduce_false",
		"04_view_reduce_no_group",
		"04_view_group_true",
		"04_view_group_level1",
		"04_view_include_docs_on_reduce_400",
		"04_view_missing_ddoc_404",
		"04_view_missing_view_404",
		"04_view_info_missing_ddoc_404",
	} {
		fx := loadFixture(t, name)
		checkExact(t, name, do(t, s, fx.Request.Method, fx.Request.Path, nil), fx)
	}
	if n := s.MapDocCount("couchdb@127.0.0.1"); n != 40 {
		t.Errorf("map_doc after the build = %d, want 40 (one call per document)", n)
	}

	// include_docs: the same bytes once this server's revisions are swapped for the recorded.
	fx := loadFixture(t, "04_view_reduce_false_limit3_include_docs")
	got := do(t, s, fx.Request.Method, fx.Request.Path, nil)
	var recorded struct {
		Rows []struct {
			ID  string
			Doc struct {
				Rev string `json:"_rev"`
			}
		}
	}
	if err := json.Unmarshal(fx.Body, &recorded); err != nil {
		t.Fatal(err)
	}
	for _, row := range recorded.Rows {
		got.body = []byte(strings.ReplaceAll(string(got.body), revs[row.ID], row.Doc.Rev))
	}
	checkExact(t, fx.Request.Path, got, fx)

	checkShape(t, "04_view_info_after_build", do(t, s, http.MethodGet, "/bench_views/_design/scores/_info", nil),
		loadFixture(t, "04_view_info_after_build"), "sizes", "signature", "waiting_commit")

	// Five more docs: update=false answers the index as built (04_view_update_false), the
	// default query updates it, mapping only the new docs.
	more := `{"docs":[` + strings.Repeat(`{"metadata":{"docType":"score","createdAt":"2026-11-20"},"username":"abcdef","score":1000},`, 4) +
		`{"metadata":{"docType":"score","createdAt":"2026-11-20"},"username":"abcdef","score":1000}]}`
	do(t, s, http.MethodPost, "/bench_views/_bulk_docs", []byte(more))
	fx = loadFixture(t, "04_view_update_false")
	checkExact(t, fx.Request.Path, do(t, s, http.MethodGet, fx.Request.Path, nil), fx)
	info := do(t, s, http.MethodGet, "/bench_views/_design/scores/_info", nil).json(t)["view_index"].(map[string]any)
	if info["update_seq"] != 41.0 || info["updates_pending"].(map[string]any)["total"] != 5.0 {
		t.Errorf("stale index info %v", info)
	}
	if got := do(t, s, http.MethodGet, "/bench_views/_design/scores/_view/by_month", nil); string(got.body) != "{\"rows\":[\r\n{\"key\":null,\"value\":122541}\r\n]}\n" {
		t.Errorf("after 5 more docs: %q", got.body)
	}
	if n := s.MapDocCount("_local"); n != 45 {
		t.Errorf("map_doc = %d, want 45", n)
	}
	do(t, s, http.MethodGet, "/bench_views/_design/scores/_view/by_month", nil)
	if n := s.MapDocCount("_local"); n != 45 {
		t.Errorf("an up-to-date index mapped again: map_doc = %d", n)
	}

	stats := loadFixture(t, "05_javascript_stats_mrview_after")
	checkShape(t, "mrview stats", do(t, s, http.MethodGet, "/_node/_local/_stats/couchdb/mrview", nil), stats, "value")
	leaf := do(t, s, http.MethodGet, "/_node/couchdb@127.0.0.1/_stats/couchdb/mrview/map_doc", nil)
	if string(leaf.body) != "{\"value\":45,\"type\":\"counter\",\"desc\":\"number of documents mapped in the view server\"}\n" {
		t.Errorf("map_doc leaf %s", leaf.body)
	}
}

// TestCustomReduceAsRecorded runs the recorded custom reduce (view by_month_jsreduce, a
// name this server does not know) under the name by_month: the same answers.
func TestCustomReduceAsRecorded(t *testing.T) {
	s := couchtest.New(t)
	seedBenchViews(t, s)
	var ddoc struct {
		Views map[string]struct {
			Map    string `json:"map"`
			Reduce string `json:"reduce"`
		}
	}
	if err := json.Unmarshal(loadFixture(t, "04_get_ddoc_200").Body, &ddoc); err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(map[string]any{"views": map[string]any{"by_month": ddoc.Views["by_month_jsreduce"]}})
	do(t, s, http.MethodPut, "/bench_views/_design/js", js)
	for _, name := range []string{"04_view_jsreduce_group_true", "04_view_jsreduce_no_group"} {
		fx := loadFixture(t, name)
		path := strings.Replace(fx.Request.Path, "scores/_view/by_month_jsreduce", "js/_view/by_month", 1)
		checkExact(t, name, do(t, s, http.MethodGet, path, nil), fx)
	}
	if got := do(t, s, http.MethodGet, "/bench_views/_design/scores/_view/by_month_jsreduce", nil); got.status != http.StatusInternalServerError {
		t.Errorf("a view name this server does not know: %d", got.status)
	}

}

func TestViewsByName(t *testing.T) {
	s := couchtest.New(t)
	seedBenchViews(t, s)
	ddoc := `{"views":{"emit_doc":{"map":"any code"},"emit_null":{"map":"any code"},"by_day":{"map":"function(doc){}"}}}`
	if got := do(t, s, http.MethodPut, "/bench_views/_design/reads", []byte(ddoc)); got.status != http.StatusCreated {
		t.Fatalf("%d %s", got.status, got.body)
	}
	type rows struct {
		TotalRows int `json:"total_rows"`
		Offset    int
		Rows      []struct {
			ID    string
			Key   string
			Value json.RawMessage
			Doc   json.RawMessage
		}
	}
	query := func(path string) rows {
		t.Helper()
		got := do(t, s, http.MethodGet, path, nil)
		var r rows
		if err := json.Unmarshal(got.body, &r); err != nil || got.status != http.StatusOK {
			t.Fatalf("%s: %d %s", path, got.status, got.body)
		}
		return r
	}
	r := query(`/bench_views/_design/reads/_view/emit_null?startkey="score-00010"&limit=2`)
	if r.TotalRows != 40 || r.Offset != 9 || len(r.Rows) != 2 || r.Rows[0].ID != "score-00010" || r.Rows[1].Key != "score-00011" ||
		string(r.Rows[0].Value) != "null" {
		t.Errorf("emit_null with startkey: %+v", r)
	}
	r = query(`/bench_views/_design/reads/_view/emit_doc?key="score-00007"&include_docs=true`)
	if len(r.Rows) != 1 || string(r.Rows[0].Value) != string(r.Rows[0].Doc) || !strings.Contains(string(r.Rows[0].Doc), `"_rev":`) {
		t.Errorf("emit_doc: %+v", r)
	}
	r = query(`/bench_views/_design/reads/_view/emit_null?descending=true&limit=1`)
	if len(r.Rows) != 1 || r.Rows[0].ID != "score-00040" || r.Offset != 0 {
		t.Errorf("descending: %+v", r)
	}
	r = query(`/bench_views/_design/reads/_view/emit_null?endkey="score-00003"&inclusive_end=false`)
	if len(r.Rows) != 2 {
		t.Errorf("endkey exclusive: %+v", r)
	}

	got := do(t, s, http.MethodGet, "/bench_views/_design/reads/_view/by_day", nil)
	if got.status != http.StatusInternalServerError || got.json(t)["error"] != "couchtest_unknown_view" {
		t.Errorf("a view this server cannot evaluate: %d %s", got.status, got.body)
	}
	got = do(t, s, http.MethodGet, "/bench_views/_design/reads/_view/emit_null?reduce=true", nil)
	if got.status != http.StatusBadRequest || got.json(t)["reason"] != "Reduce is invalid for map-only views." {
		t.Errorf("reduce on a map view: %d %s", got.status, got.body)
	}

	fx := loadFixture(t, "04_ddoc_js_unknown_builtin_reduce_put")
	checkExact(t, fx.Request.Path, do(t, s, fx.Request.Method, fx.Request.Path, fx.requestBody()), fx)
}

func TestSumOverStrings(t *testing.T) {
	s := couchtest.New(t)
	do(t, s, http.MethodPut, "/db", nil)
	do(t, s, http.MethodPut, "/db/_design/d", []byte(`{"views":{"by_month":{"map":"...","reduce":"_sum"}}}`))
	do(t, s, http.MethodPut, "/db/x", []byte(`{"metadata":{"createdAt":"2026-01-02"},"score":"YHikQl"}`))
	fx := loadFixture(t, "04_ddoc_js_sum_non_numeric_query")
	checkExact(t, "_sum over a string", do(t, s, http.MethodGet, "/db/_design/d/_view/by_month", nil), fx)
}

func TestMapDocOnEveryNode(t *testing.T) {
	s := couchtest.New(t, couchtest.WithNodes(clusterNodes...))
	seedBenchViews(t, s)
	do(t, s, http.MethodGet, "/bench_views/_design/scores/_view/by_month", nil)
	for _, node := range clusterNodes {
		if n := s.MapDocCount(node); n != 40 {
			t.Errorf("%s: map_doc = %d", node, n)
		}
	}
	fx := loadFixture(t, "06_cluster_javascript_stats_mrview_after_node2")
	checkShape(t, fx.Request.Path, do(t, s, http.MethodGet, fx.Request.Path, nil), fx, "value")
}

func TestReduces(t *testing.T) {
	s := couchtest.New(t)
	do(t, s, http.MethodPut, "/db", nil)
	do(t, s, http.MethodPost, "/db/_bulk_docs", []byte(`{"docs":[
		{"metadata":{"createdAt":"2026-01-02"},"score":1.5},
		{"metadata":{"createdAt":"2026-01-03"},"score":2},
		{"metadata":{"createdAt":"2026-02-01"}},
		{"metadata":{"createdAt":5},"score":7},
		{"username":"no metadata","score":7}]}`))
	got := do(t, s, http.MethodPost, "/db/_bulk_docs", []byte(`{"docs":[
		{"_id":"_design/count","views":{"by_month":{"map":"...","reduce":"_count"}}},
		{"_id":"_design/sum","views":{"by_month":{"map":"...","reduce":"_sum"}}},
		{"_id":"_design/stats","views":{"by_month":{"map":"...","reduce":"_stats"}}},
		{"_id":"_design/bad","views":{"by_month":{"map":"...","reduce":"_median"}}}]}`))
	if !strings.Contains(string(got.body), "{\"id\":\"_design/bad\",\"error\":\"invalid_design_doc\","+
		"\"reason\":\"`_median` is not a supported reduce function.\"}") {
		t.Errorf("an invalid design doc in _bulk_docs: %s", got.body)
	}
	for _, tc := range []struct{ path, want string }{
		{"/db/_design/count/_view/by_month?group=true", `{"key":["2026","01"],"value":2},` + "\r\n" + `{"key":["2026","02"],"value":1}`},
		{"/db/_design/sum/_view/by_month?group=true&limit=1", `{"key":["2026","01"],"value":3.5}`},
		{"/db/_design/sum/_view/by_month?group=true&skip=1", `{"key":["2026","02"],"value":{"error":"builtin_reduce_error",` +
			`"reason":"The _sum function requires that map values be numbers, arrays of numbers, or objects. Objects cannot be mixed ` +
			`with other data structures. Objects can be arbitrarily nested, provided that the values for all fields are themselves ` +
			`numbers, arrays of numbers, or objects.","caused_by":null}}`},
		{"/db/_design/count/_view/by_month?group_level=1", `{"key":["2026"],"value":3}`},
		{"/db/_design/count/_view/by_month", `{"key":null,"value":3}`},
		{"/db/_design/count/_view/by_month?key=%5B%222026%22%2C%2202%22%5D", `{"key":null,"value":1}`},
	} {
		got := do(t, s, http.MethodGet, tc.path, nil)
		if want := "{\"rows\":[\r\n" + tc.want + "\r\n]}\n"; string(got.body) != want {
			t.Errorf("%s:\n%q\nwant\n%q", tc.path, got.body, want)
		}
	}
	if got := do(t, s, http.MethodGet, "/db/_design/stats/_view/by_month", nil); got.status != http.StatusInternalServerError {
		t.Errorf("_stats: %d %s", got.status, got.body)
	}
}

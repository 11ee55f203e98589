package couchtest_test

// Tests of internal/couchtest itself, the in-repo fake (not CouchDB), against the
// recordings of CouchDB 3.4.3 it is built on.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/couchbench/couchbench/internal/couchtest"
)

// TestRecordedSessions replays the recorded requests of 00_*, 02_* and 03_* in the order they
// were made and compares every answer with the recording: revisions, generated ids and the
// database's timestamps, sequences and sizes are the server's own, everything else must
// match. The recorded revisions in later requests are replaced by the server's.
func TestRecordedSessions(t *testing.T) {
	s := couchtest.New(t)
	revs := map[string]string{} // recorded -> this server's
	dbInfo := []string{"instance_start_time", "purge_seq", "update_seq", "sizes"}
	steps := []struct {
		fixture string
		masked  []string
	}{
		{"02_delete_missing_db_404", nil},
		{"02_get_missing_db_404", nil},
		{"02_put_db_201", nil},
		{"02_get_db_info_empty", dbInfo},
		{"02_put_db_again_412", nil},
		{"02_put_db_illegal_name_400", nil},
		{"03_bulk_docs_3_201", []string{"rev"}},
		{"03_bulk_docs_conflict_201", []string{"rev"}},
		{"03_bulk_docs_invalid_json_400", nil},
		{"03_bulk_docs_docs_not_array_400", nil},
		{"03_bulk_docs_missing_docs_400", nil},
		{"03_bulk_docs_body_is_array_400", nil},
		{"03_config_get_max_document_size_unset_404", nil},
		{"03_config_put_max_document_size_1000", nil},
		{"03_bulk_docs_doc_too_large_413", nil},
		{"03_bulk_docs_mixed_small_and_too_large_413", nil},
		{"03_get_doc_small_after_413", nil},
		{"03_put_doc_too_large_413", nil},
		{"03_config_delete_max_document_size", nil},
		{"03_config_get_max_document_size_after_restore_404", nil},
		{"03_bulk_docs_same_big_doc_after_restore_201", []string{"rev"}},
		{"03_post_doc_batch_ok_202", nil},
		{"03_post_doc_batch_ok_no_id_202", []string{"id"}},
		{"03_put_doc_201", []string{"rev"}},
		{"03_get_doc_200", []string{"_rev"}},
		{"03_get_doc_batch_written_200", []string{"_rev"}},
		{"03_get_missing_doc_404", nil},
		{"03_put_doc_without_rev_409", nil},
		{"03_put_doc_update_with_rev_201", []string{"rev"}},
		{"03_delete_doc_200", []string{"rev"}},
		{"03_get_deleted_doc_404", nil},
		{"03_get_db_info_after_docs", dbInfo},
		{"00_delete_db_existing_200", nil},
	}
	for _, st := range steps {
		fx := loadFixture(t, st.fixture)
		path, body := fx.Request.Path, fx.requestBody()
		for recorded, mine := range revs {
			path = strings.ReplaceAll(path, recorded, mine)
			body = []byte(strings.ReplaceAll(string(body), recorded, mine))
		}
		if st.fixture == "00_delete_db_existing_200" {
			path = "/bench_api" // recorded on a leftover db named testdb
		}
		got := do(t, s, fx.Request.Method, path, body)
		checkShape(t, st.fixture, got, fx, st.masked...)
		learnRevs(t, st.fixture, got, fx, revs)
		if etag, ok := fx.Headers["ETag"]; ok && got.header.Get("ETag") != `"`+revs[strings.Trim(etag, `"`)]+`"` {
			t.Errorf("%s: ETag %s, want this server's rev for recorded %s", st.fixture, got.header.Get("ETag"), etag)
		}
		if loc, ok := fx.Headers["Location"]; ok && got.header.Get("Location") != s.URL+strings.TrimPrefix(loc, "http://127.0.0.1:5984") {
			t.Errorf("%s: Location %s, recorded %s", st.fixture, got.header.Get("Location"), loc)
		}
		switch st.fixture {
		case "03_post_doc_batch_ok_no_id_202":
			if id, _ := got.json(t)["id"].(string); !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(id) {
				t.Errorf("generated id %q", id)
			}
		case "03_get_db_info_after_docs":
			// The sequence counts the writes: 3+1 bulk docs, score-big, 2 batch docs, score-0100 x3.
			if seq, _ := got.json(t)["update_seq"].(string); !strings.HasPrefix(seq, "10-") {
				t.Errorf("update_seq %q, recorded 10-...", seq)
			}
			if n := s.DocCount("bench_api"); n != 7 {
				t.Errorf("DocCount = %d, want 7", n)
			}
		}
	}
}

// learnRevs pairs the recorded revisions of an answer with this server's.
func learnRevs(t *testing.T, name string, got response, fx fixture, revs map[string]string) {
	t.Helper()
	collect := func(body []byte) []string {
		matches := regexp.MustCompile(`"_?rev":"([^"]+)"`).FindAllSubmatch(body, -1)
		out := make([]string, 0, len(matches))
		for _, m := range matches {
			out = append(out, string(m[1]))
		}
		return out
	}
	recorded, mine := collect([]byte(fx.raw())), collect(got.body)
	if len(recorded) != len(mine) {
		t.Fatalf("%s: revisions %v, recorded %v", name, mine, recorded)
	}
	for i, rev := range mine {
		if !revShape.MatchString(rev) {
			t.Errorf("%s: rev %q is not <generation>-<32 hex>", name, rev)
		}
		if !strings.HasPrefix(rev, strings.SplitN(recorded[i], "-", 2)[0]+"-") {
			t.Errorf("%s: rev %s, recorded generation of %s", name, rev, recorded[i])
		}
		revs[recorded[i]] = rev
	}
}

func TestBulkDocs(t *testing.T) {
	s := couchtest.New(t)
	do(t, s, http.MethodPut, "/db", nil)

	// Documents without _id get CouchDB-shaped ids, in increasing order.
	got := do(t, s, http.MethodPost, "/db/_bulk_docs", []byte(`{"docs":[{"a":1},{"a":2},{"a":3}]}`))
	var results []map[string]any
	if err := json.Unmarshal(got.body, &results); err != nil || got.status != http.StatusCreated || len(results) != 3 {
		t.Fatalf("%d %s", got.status, got.body)
	}
	for i, r := range results {
		id, _ := r["id"].(string)
		if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(id) || (i > 0 && id <= results[i-1]["id"].(string)) {
			t.Errorf("generated ids %v", results)
		}
	}

	// CouchDB 3.4.3 has no limit on the number of docs.
	var b strings.Builder
	b.WriteString(`{"docs":[`)
	for i := range 10001 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"_id":"d%05d"}`, i)
	}
	b.WriteString(`]}`)
	if got := do(t, s, http.MethodPost, "/db/_bulk_docs", []byte(b.String())); got.status != http.StatusCreated {
		t.Errorf("10001 docs: %d", got.status)
	}
	if n := s.DocCount("db"); n != 10004 {
		t.Errorf("DocCount = %d", n)
	}

	// Deleting through _bulk_docs, and a design doc does not count.
	rev := do(t, s, http.MethodGet, "/db/d00000", nil).json(t)["_rev"].(string)
	do(t, s, http.MethodPost, "/db/_bulk_docs", []byte(`{"docs":[{"_id":"d00000","_rev":"`+rev+`","_deleted":true},{"_id":"_design/x"}]}`))
	if n := s.DocCount("db"); n != 10003 {
		t.Errorf("DocCount after a delete and a design doc = %d", n)
	}
	if got := do(t, s, http.MethodGet, "/db", nil).json(t); got["doc_count"] != 10004.0 || got["doc_del_count"] != 1.0 {
		t.Errorf("db info counts design docs as CouchDB does: %v", got)
	}

	limited := couchtest.New(t, couchtest.WithMaxBulkDocsCount(2), couchtest.WithMaxDocumentSize(100))
	do(t, limited, http.MethodPut, "/db", nil)
	if got := do(t, limited, http.MethodPost, "/db/_bulk_docs", []byte(`{"docs":[{},{},{}]}`)); got.status != http.StatusRequestEntityTooLarge {
		t.Errorf("over WithMaxBulkDocsCount: %d %s", got.status, got.body)
	}
	big := []byte(`{"pad":"` + strings.Repeat("x", 100) + `"}`)
	fx := loadFixture(t, "03_put_doc_too_large_413")
	checkExact(t, "WithMaxDocumentSize", do(t, limited, http.MethodPut, "/db/big", big), fx)

	wrongType, err := http.NewRequest(http.MethodPost, s.URL+"/db/_bulk_docs", strings.NewReader(`{"docs":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	wrongType.SetBasicAuth("admin", "secret")
	wrongType.Header.Set("Content-Type", "text/plain")
	resp, err := http.DefaultClient.Do(wrongType)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Errorf("text/plain body: %d", resp.StatusCode)
	}
}

func TestDatabaseOnACluster(t *testing.T) {
	s := couchtest.New(t, couchtest.WithNodes(clusterNodes...))
	if got := do(t, s, http.MethodPut, "/bench?q=2&n=3", nil); got.status != http.StatusCreated {
		t.Fatalf("%d %s", got.status, got.body)
	}
	cluster := do(t, s, http.MethodGet, "/bench", nil).json(t)["cluster"]
	want := map[string]any{"q": 2.0, "n": 3.0, "w": 2.0, "r": 2.0} // 06_cluster_*_db_info_after_seed
	if fmt.Sprint(cluster) != fmt.Sprint(want) {
		t.Errorf("cluster = %v, want %v", cluster, want)
	}
	if got := do(t, s, http.MethodPut, "/bad?q=0", nil); got.status != http.StatusBadRequest {
		t.Errorf("q=0: %d", got.status)
	}
}

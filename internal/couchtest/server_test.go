package couchtest_test

// Tests of internal/couchtest itself, the in-repo fake (not CouchDB), against the
// recordings of CouchDB 3.4.3 it is built on.

import (
	"net/http"
	"testing"

	"github.com/couchbench/couchbench/internal/couchtest"
)

var clusterNodes = []string{"node1@127.0.0.11", "node2@127.0.0.12", "node3@127.0.0.13"}

func TestServerEndpointsAsRecorded(t *testing.T) {
	single := couchtest.New(t)
	cluster := couchtest.New(t, couchtest.WithNodes(clusterNodes...))
	for _, tc := range []struct {
		fixture string
		server  *couchtest.Server
	}{
		{"01_get_root", single},
		{"01_get_root_accept_any", single},
		{"01_get_root_no_accept", single},
		{"01_get_up", single},
		{"01_get_membership", single},
		{"01_get_active_tasks_idle", single},
		{"01_get_config_couchdb", single},
		{"06_cluster_get_membership", cluster},
		{"06_cluster_get_node_local_name", cluster},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			fx := loadFixture(t, tc.fixture)
			checkExact(t, tc.fixture, do(t, tc.server, fx.Request.Method, fx.Request.Path, nil), fx)
		})
	}
}

func TestHeadersDoNotDependOnAccept(t *testing.T) {
	s := couchtest.New(t)
	for _, accept := range []string{"", "*/*", "text/plain"} {
		req, err := http.NewRequest(http.MethodGet, s.URL+"/", nil)
		if err != nil {
			t.Fatal(err)
		}
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("Accept %q: Content-Type %q", accept, ct)
		}
	}
}

func TestAuth(t *testing.T) {
	s := couchtest.New(t)
	custom := couchtest.New(t, couchtest.WithAdmin("bench", "pw"))
	for _, tc := range []struct {
		fixture        string
		server         *couchtest.Server
		user, password string
	}{
		{"02_no_credentials_root_200", s, "", ""},
		{"02_wrong_password_root_401", s, "admin", "wrong"},
		{"02_wrong_password_401", s, "admin", "wrong"},
		{"02_no_credentials_active_tasks_401", s, "", ""},
		{"02_no_credentials_config_401", s, "", ""},
		{"02_no_credentials_create_db_401", s, "", ""},
		{"02_wrong_password_401", custom, "admin", "secret"},
		{"02_no_credentials_create_db_401", custom, "", ""},
		{"01_get_active_tasks_idle", custom, "bench", "pw"},
		{"01_get_up", s, "", ""},
	} {
		fx := loadFixture(t, tc.fixture)
		got := doAs(t, tc.server, tc.user, tc.password, fx.Request.Method, fx.Request.Path, nil)
		checkExact(t, tc.fixture+" as "+tc.user, got, fx)
	}
	if n := s.DocCount("bench_anon"); n != 0 {
		t.Errorf("refused PUT /bench_anon left %d docs", n)
	}
	if got := do(t, s, http.MethodGet, "/bench_anon", nil); got.status != http.StatusNotFound {
		t.Errorf("refused PUT /bench_anon created the database: GET answered %d", got.status)
	}
}

func TestUnknownPathsAndMethods(t *testing.T) {
	s := couchtest.New(t)
	missing := loadFixture(t, "03_get_missing_doc_404")
	for _, path := range []string{"/_all_dbs_nope", "/_node/_local/_nope", "/_node/nobody@nowhere/_stats/couchdb/mrview"} {
		got := do(t, s, http.MethodGet, path, nil)
		if got.status != http.StatusNotFound || string(got.body) != missing.raw() {
			t.Errorf("GET %s: %d %s", path, got.status, got.body)
		}
	}
	got := do(t, s, http.MethodPost, "/_up", nil)
	if got.status != http.StatusMethodNotAllowed || got.json(t)["error"] != "method_not_allowed" {
		t.Errorf("POST /_up: %d %s", got.status, got.body)
	}
}

func TestConfig(t *testing.T) {
	s := couchtest.New(t, couchtest.WithNodes(clusterNodes...))
	const path = "/_node/_local/_config/couchdb/max_document_size"
	steps := []struct {
		fixture, method, path string
		body                  []byte
	}{
		{"03_config_get_max_document_size_unset_404", http.MethodGet, path, nil},
		{"03_config_put_max_document_size_1000", http.MethodPut, path, []byte(`"1000"`)},
		{"03_config_delete_max_document_size", http.MethodDelete, path, nil},
		{"03_config_get_max_document_size_after_restore_404", http.MethodGet, path, nil},
		{"05b_config_put_smoosh_ratio_views_max_size", http.MethodPut, "/_node/node2@127.0.0.12/_config/smoosh.ratio_views/max_size", []byte(`"1"`)},
	}
	for _, st := range steps {
		checkExact(t, st.fixture, do(t, s, st.method, st.path, st.body), loadFixture(t, st.fixture))
	}
	// Per node: node2 has the key, node1 (_local) does not.
	if v, ok := s.Config("node2@127.0.0.12", "smoosh.ratio_views", "max_size"); !ok || v != "1" {
		t.Errorf("Config(node2) = %q, %v", v, ok)
	}
	if _, ok := s.Config("_local", "smoosh.ratio_views", "max_size"); ok {
		t.Error("a key PUT on node2 showed on node1")
	}
	fx := loadFixture(t, "05b_config_delete_smoosh_ratio_views_max_size")
	checkExact(t, fx.Request.Path, do(t, s, http.MethodDelete, "/_node/node2@127.0.0.12/_config/smoosh.ratio_views/max_size", nil), fx)
	if got := do(t, s, http.MethodDelete, "/_node/node2@127.0.0.12/_config/smoosh.ratio_views/max_size", nil); got.status != http.StatusNotFound {
		t.Errorf("second DELETE: %d", got.status)
	}
	// PUT answers the previous value.
	do(t, s, http.MethodPut, path, []byte(`"1000"`))
	if got := do(t, s, http.MethodPut, path, []byte(`"2000"`)); string(got.body) != "\"1000\"\n" {
		t.Errorf("PUT over a value answered %q", got.body)
	}
	if v, _ := s.Config("node1@127.0.0.11", "couchdb", "max_document_size"); v != "2000" {
		t.Errorf("Config = %q", v)
	}
}

func TestClusterSetup(t *testing.T) {
	cluster := couchtest.New(t, couchtest.WithNodes(clusterNodes...))
	state := func(s *couchtest.Server) any {
		return do(t, s, http.MethodGet, "/_cluster_setup", nil).json(t)["state"]
	}
	if got := state(cluster); got != "cluster_enabled" {
		t.Errorf("before finish_cluster: %v", got)
	}
	if got := do(t, cluster, http.MethodPost, "/_cluster_setup", []byte(`{"action":"finish_cluster"}`)); got.status != http.StatusCreated ||
		string(got.body) != "{\"ok\":true}\n" {
		t.Errorf("finish_cluster: %d %s", got.status, got.body)
	}
	fx := loadFixture(t, "06_cluster_get_cluster_setup")
	checkExact(t, "after finish_cluster", do(t, cluster, http.MethodGet, "/_cluster_setup", nil), fx)
	if got := do(t, cluster, http.MethodPost, "/_cluster_setup", []byte(`{"action":"finish_cluster"}`)); got.status != http.StatusBadRequest {
		t.Errorf("second finish_cluster: %d %s", got.status, got.body)
	}
	// The recorded single node has [couchdb] single_node = "true".
	if got := state(couchtest.New(t)); got != "single_node_enabled" {
		t.Errorf("single node: %v", got)
	}
}

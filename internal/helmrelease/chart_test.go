package helmrelease

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"helm.sh/helm/v3/pkg/repo"
)

// chartArchive writes the built-in chart's packaged archive into dir, as a chart repository
// serves it.
func chartArchive(t *testing.T, dir string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "couchdb-"+BuiltInChartVersion+".tgz"), builtInArchive, 0o644); err != nil {
		t.Fatal(err)
	}
}

// chartRepository serves dir as a classic Helm repository (index.yaml and archives, as
// `helm repo index` lays them out) and counts the requests per path.
type chartRepository struct {
	*httptest.Server
	mu       sync.Mutex
	requests map[string]int
}

func newChartRepository(t *testing.T) *chartRepository {
	t.Helper()
	dir := t.TempDir()
	chartArchive(t, dir)
	index, err := repo.IndexDirectory(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := index.WriteFile(filepath.Join(dir, "index.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &chartRepository{requests: map[string]int{}}
	files := http.FileServer(http.Dir(dir))
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.requests[req.URL.Path]++
		r.mu.Unlock()
		files.ServeHTTP(w, req)
	}))
	t.Cleanup(r.Close)
	return r
}

// total is the number of requests the repository answered.
func (r *chartRepository) total() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.requests {
		n += c
	}
	return n
}

func (r *chartRepository) count(path string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests[path]
}

func TestInstallFromRepository(t *testing.T) {
	ctx := testContext(t)
	srv := newChartRepository(t)
	cache := t.TempDir()
	m := newManager(t, cache, srv.URL)
	ns := env.Namespace(t)
	ref := ChartRef{Repository: srv.URL, Name: "couchdb", Version: BuiltInChartVersion}

	st, err := m.Install(ctx, ns, "fromrepo", ref, benchValues(), nil)
	if err != nil || st.State != Deployed || st.ChartVersion != BuiltInChartVersion {
		t.Fatalf("Install from %s = %+v, %v; want Deployed %s", srv.URL, st, err, BuiltInChartVersion)
	}
	if srv.count("/index.yaml") != 1 || srv.count("/couchdb-"+BuiltInChartVersion+".tgz") != 1 {
		t.Errorf("requests = %v, want index.yaml and the archive once each", srv.requests)
	}
	if _, err := os.Stat(filepath.Join(cache, "charts", sourceKey(srv.URL), "couchdb-"+BuiltInChartVersion+".tgz")); err != nil {
		t.Errorf("downloaded chart not cached: %v", err)
	}

	// An exact version that is cached is loaded without asking the repository, even by a
	// Manager started afterwards on the same cache (an operator restart).
	again := newManager(t, cache, srv.URL)
	ch, err := again.LoadChart(ctx, ref)
	if err != nil || ch.Metadata.Version != BuiltInChartVersion {
		t.Fatalf("LoadChart from the cache = %v, %v", ch, err)
	}
	if srv.count("/index.yaml") != 1 || srv.count("/couchdb-"+BuiltInChartVersion+".tgz") != 1 {
		t.Errorf("requests = %v after a cached load, want no new ones", srv.requests)
	}

	// A range reads the index again, then uses the cached archive.
	if _, err := again.LoadChart(ctx, ChartRef{Repository: srv.URL, Name: "couchdb", Version: ">=4.6.0 <4.7.0"}); err != nil {
		t.Fatalf("LoadChart with a range: %v", err)
	}
	if srv.count("/index.yaml") != 2 || srv.count("/couchdb-"+BuiltInChartVersion+".tgz") != 1 {
		t.Errorf("requests = %v after a range, want the index twice and the archive once", srv.requests)
	}
}

func TestRepositoryErrors(t *testing.T) {
	ctx := testContext(t)
	srv := newChartRepository(t)
	m := newManager(t, "", srv.URL)

	for _, tc := range []struct {
		name string
		ref  ChartRef
		want []string
	}{{
		name: "unknown version",
		ref:  ChartRef{Repository: srv.URL, Name: "couchdb", Version: "9.9.9"},
		want: []string{`"9.9.9"`, srv.URL, BuiltInChartVersion},
	}, {
		// Helm picks the latest stable version when none is given; the repository has no
		// stable version in that range.
		name: "no version in the range",
		ref:  ChartRef{Repository: srv.URL, Name: "couchdb", Version: ">=5.0.0"},
		want: []string{`">=5.0.0"`, srv.URL, BuiltInChartVersion},
	}, {
		name: "unknown chart",
		ref:  ChartRef{Repository: srv.URL, Name: "postgres", Version: "1.0.0"},
		want: []string{`"postgres"`, srv.URL, "couchdb"},
	}, {
		name: "not a repository",
		ref:  ChartRef{Repository: srv.URL + "/nothing-here", Name: "couchdb", Version: BuiltInChartVersion},
		want: []string{srv.URL + "/nothing-here/index.yaml", "404"},
	}, {
		name: "no chart name",
		ref:  ChartRef{Repository: srv.URL, Version: BuiltInChartVersion},
		want: []string{srv.URL, "no chart name"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := m.LoadChart(ctx, tc.ref)
			if err == nil {
				t.Fatal("LoadChart succeeded")
			}
			t.Log(err)
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
		})
	}

	// An unknown version fails Install before anything is created.
	ns := env.Namespace(t)
	st, err := m.Install(ctx, ns, "missing", ChartRef{Repository: srv.URL, Name: "couchdb", Version: "9.9.9"}, benchValues(), nil)
	if err == nil || st.State != NotInstalled {
		t.Errorf("Install of an unknown version = %+v, %v; want NotInstalled and an error", st, err)
	}
}

func TestLoadChartErrors(t *testing.T) {
	ctx := testContext(t)
	// Allowed, so that the reference itself is what fails.
	m := newManager(t, "", "ftp://charts.example.invalid", "oci://registry.example.invalid")
	missing := filepath.Join(t.TempDir(), "no-such-chart")
	notAChart := t.TempDir()
	if err := os.WriteFile(filepath.Join(notAChart, "values.yaml"), []byte("a: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	library := filepath.Join(t.TempDir(), "library")
	if err := os.MkdirAll(library, 0o755); err != nil {
		t.Fatal(err)
	}
	chartYAML := "apiVersion: v2\nname: helpers\nversion: 1.0.0\ntype: library\n"
	if err := os.WriteFile(filepath.Join(library, "Chart.yaml"), []byte(chartYAML), 0o644); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name string
		ref  ChartRef
		want []string
	}{
		{"missing path", ChartRef{Path: missing}, []string{missing}},
		{"not a chart", ChartRef{Path: notAChart}, []string{notAChart, "Chart.yaml"}},
		{"library chart", ChartRef{Path: library}, []string{library, "library chart"}},
		{"path and repository", ChartRef{Path: missing, Repository: "https://example.invalid"}, []string{"more than one"}},
		{"archive and repository", ChartRef{Archive: []byte("x"), ArchiveSource: "ConfigMap a/b", Repository: "https://example.invalid"},
			[]string{"more than one"}},
		{"archive that is not a chart", ChartRef{Archive: []byte("not a tarball"), ArchiveSource: `ConfigMap ns/charts key "couchdb.tgz"`},
			[]string{`ConfigMap ns/charts key "couchdb.tgz"`, "not a packaged Helm chart"}},
		{"archive of another version", ChartRef{Archive: builtInArchive, ArchiveSource: "ConfigMap ns/charts", Version: "4.5.0"},
			[]string{"ConfigMap ns/charts", "4.6.2", "4.5.0"}},
		{"unsupported scheme", ChartRef{Repository: "ftp://charts.example.invalid", Name: "couchdb"}, []string{"ftp://charts.example.invalid"}},
		{"bad OCI reference", ChartRef{Repository: "oci://registry.example.invalid/Bad Name", Version: "1.0.0"},
			[]string{"oci://registry.example.invalid/Bad Name", `"1.0.0"`}},
		{"OCI tag and version disagree", ChartRef{Repository: "oci://registry.example.invalid/charts/couchdb:4.6.2", Version: "4.6.1"},
			[]string{"oci://registry.example.invalid/charts/couchdb:4.6.2", "4.6.1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := m.LoadChart(ctx, tc.ref)
			if err == nil {
				t.Fatal("LoadChart succeeded")
			}
			t.Log(err)
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
		})
	}
}

// A chart held in memory (read from a ConfigMap by the operator) installs like any other.
func TestInstallFromArchive(t *testing.T) {
	ctx := testContext(t)
	m := newManager(t, "")
	ns := env.Namespace(t)
	ref := ChartRef{Archive: builtInArchive, ArchiveSource: "ConfigMap " + ns + "/couchdb-chart", Version: BuiltInChartVersion}
	st, err := m.Install(ctx, ns, "fromarchive", ref, benchValues(), nil)
	if err != nil || st.State != Deployed || st.ChartVersion != BuiltInChartVersion {
		t.Fatalf("Install from an archive = %+v, %v; want Deployed %s", st, err, BuiltInChartVersion)
	}
}

package helmrelease

import (
	"context"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/distribution/distribution/v3/configuration"
	"github.com/distribution/distribution/v3/registry/handlers"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/inmemory" // the registry's storage
	"github.com/sirupsen/logrus"
	"helm.sh/helm/v3/pkg/registry"
)

// ociRegistry runs a real OCI registry (CNCF Distribution, the one Helm tests against) in
// process on loopback, with the Apache chart pushed as <host>/charts/couchdb:<version>, and
// returns its host and a plain-HTTP Helm registry client for it.
func ociRegistry(t *testing.T) (string, *registry.Client) {
	t.Helper()
	// The registry logs every request through logrus's standard logger: keep test output short.
	out := logrus.StandardLogger().Out
	logrus.SetOutput(io.Discard)
	t.Cleanup(func() { logrus.SetOutput(out) })

	config := &configuration.Configuration{}
	config.Storage = configuration.Storage{"inmemory": configuration.Parameters{}}
	config.HTTP.Secret = "couchbench-test"
	srv := httptest.NewServer(handlers.NewApp(context.Background(), config))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")

	client, err := registry.NewClient(
		registry.ClientOptPlainHTTP(),
		registry.ClientOptCredentialsFile(filepath.Join(t.TempDir(), "config.json")),
	)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Push(builtInArchive, host+"/charts/couchdb:"+BuiltInChartVersion); err != nil {
		t.Fatalf("pushing the Apache chart to the test registry: %v", err)
	}
	return host, client
}

func TestInstallFromOCIRegistry(t *testing.T) {
	ctx := testContext(t)
	host, client := ociRegistry(t)
	cache := t.TempDir()
	m := newManager(t, cache, "oci://"+host+"/charts")
	// The test registry speaks plain HTTP; real registries are reached over HTTPS.
	m.registry = client
	ns := env.Namespace(t)
	ref := ChartRef{Repository: "oci://" + host + "/charts/couchdb", Version: BuiltInChartVersion}

	st, err := m.Install(ctx, ns, "fromoci", ref, benchValues(), nil)
	if err != nil || st.State != Deployed || st.ChartVersion != BuiltInChartVersion {
		t.Fatalf("Install from %s = %+v, %v; want Deployed %s", ref.Repository, st, err, BuiltInChartVersion)
	}
	if _, err := os.Stat(filepath.Join(cache, "charts", sourceKey(ref.Repository), "couchdb-"+BuiltInChartVersion+".tgz")); err != nil {
		t.Errorf("pulled chart not cached: %v", err)
	}

	// A semver range is resolved against the registry's tags.
	ch, err := m.LoadChart(ctx, ChartRef{Repository: ref.Repository, Version: ">=4.6.0"})
	if err != nil || ch.Metadata.Version != BuiltInChartVersion {
		t.Fatalf("LoadChart with a range = %v, %v", ch, err)
	}

	for _, tc := range []struct {
		name string
		ref  ChartRef
		want []string
	}{
		{"unknown tag", ChartRef{Repository: ref.Repository, Version: "9.9.9"}, []string{ref.Repository, `"9.9.9"`}},
		{"unknown repository", ChartRef{Repository: "oci://" + host + "/charts/postgres", Version: "1.0.0"}, []string{"/charts/postgres", `"1.0.0"`}},
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

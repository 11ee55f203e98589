package helmrelease

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Errors of LoadChart from real servers on loopback (httptest, and a port nobody listens on),
// through Helm's own getter, and the errors Go's resolver and the API server give.
func TestTransient(t *testing.T) {
	ctx := testContext(t)
	answering := func(status int) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, http.StatusText(status), status)
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refusing := "http://" + closed.Addr().String()
	if err := closed.Close(); err != nil {
		t.Fatal(err)
	}
	repository := newChartRepository(t)
	unavailable, badGateway, tooMany := answering(http.StatusServiceUnavailable), answering(http.StatusBadGateway), answering(http.StatusTooManyRequests)
	notFound, forbidden := answering(http.StatusNotFound), answering(http.StatusForbidden)
	m := newManager(t, "", unavailable, badGateway, tooMany, refusing, notFound, forbidden, repository.URL)

	for _, tc := range []struct {
		name string
		ref  ChartRef
		want bool
	}{
		{"503 Service Unavailable", ChartRef{Repository: unavailable, Name: "couchdb", Version: BuiltInChartVersion}, true},
		{"502 Bad Gateway", ChartRef{Repository: badGateway, Name: "couchdb", Version: BuiltInChartVersion}, true},
		{"429 Too Many Requests", ChartRef{Repository: tooMany, Name: "couchdb", Version: BuiltInChartVersion}, true},
		{"connection refused", ChartRef{Repository: refusing, Name: "couchdb", Version: BuiltInChartVersion}, true},
		{"404 Not Found", ChartRef{Repository: notFound, Name: "couchdb", Version: BuiltInChartVersion}, false},
		{"403 Forbidden", ChartRef{Repository: forbidden, Name: "couchdb", Version: BuiltInChartVersion}, false},
		{"unknown version", ChartRef{Repository: repository.URL, Name: "couchdb", Version: "9.9.9"}, false},
		{"not a chart", ChartRef{Archive: []byte("not gzip"), ArchiveSource: "ConfigMap x/y"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := m.LoadChart(ctx, tc.ref)
			if err == nil {
				t.Fatal("LoadChart succeeded")
			}
			if got := Transient(err); got != tc.want {
				t.Errorf("Transient(%q) = %v, want %v", err, got, tc.want)
			}
		})
	}

	gr := schema.GroupResource{Group: "apps", Resource: "statefulsets"}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		// What the operator's pod saw when CoreDNS failed it.
		{&net.DNSError{Err: "server misbehaving", Name: "apache.github.io", Server: "10.96.0.10:53", IsTemporary: true}, true},
		{&net.DNSError{Err: "i/o timeout", Name: "apache.github.io", Server: "10.96.0.10:53", IsTimeout: true}, true},
		{&net.DNSError{Err: "no such host", Name: "apache.github.io.invalid", IsNotFound: true}, false},
		{apierrors.NewConflict(gr, "x", errors.New("the object has been modified; please apply your changes to the latest version")), true},
		{apierrors.NewServerTimeout(gr, "create", 2), true},
		{apierrors.NewTooManyRequests("slow down", 1), true},
		{apierrors.NewServiceUnavailable("etcd"), true},
		{apierrors.NewAlreadyExists(gr, "x"), false},
		{apierrors.NewForbidden(gr, "x", errors.New("no")), false},
		{errors.New("template: couchdb/templates/statefulset.yaml: bad"), false},
	} {
		wrapped := fmt.Errorf("installing chart: %w", tc.err)
		if got := Transient(wrapped); got != tc.want {
			t.Errorf("Transient(%q) = %v, want %v", wrapped, got, tc.want)
		}
	}
}

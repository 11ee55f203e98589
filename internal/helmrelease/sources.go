package helmrelease

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/registry"
)

// ErrChartNotAllowed is wrapped by the error of a chart whose source the operator's installer
// did not allow; nothing was requested from it.
var ErrChartNotAllowed = errors.New("chart source not allowed")

// Sources are the chart sources a Manager may install from besides the chart built into it
// (always allowed). The zero value allows none.
type Sources struct {
	// Repositories are the chart repositories (https://, http://) and OCI registries
	// (oci://) allowed, each with what lies under it: a chart's URL is allowed when its
	// scheme and host are an entry's and its path is the entry's path or below it, whole
	// segments only ("https://charts.example.com/couchdb" allows ".../couchdb/index.yaml",
	// not ".../couchdb-evil").
	Repositories []string
	// Archives allows packaged charts the caller read itself (ChartRef.Archive: a ConfigMap
	// of the benchmark's namespace).
	Archives bool
}

// Check refuses a reference to a source that is not allowed, before anything is fetched.
// The built-in chart and a local path (tests and tools, never a benchmark) are always
// allowed.
func (s Sources) Check(ref ChartRef) error {
	switch {
	case ref.builtIn(), ref.Path != "":
		return nil
	case ref.Archive != nil:
		if !s.Archives {
			return fmt.Errorf("%w: %s: charts the operator is handed as archives (ConfigMaps) are not allowed", ErrChartNotAllowed, ref)
		}
		return nil
	case !s.allows(ref.Repository):
		return fmt.Errorf("%w: %s: %s is not under any allowed repository (%s)", ErrChartNotAllowed, ref, ref.Repository, s.listed())
	}
	return nil
}

func (s Sources) listed() string {
	if len(s.Repositories) == 0 {
		return "none is allowed"
	}
	return "allowed: " + strings.Join(s.Repositories, ", ")
}

// allows says whether raw lies under an allowed repository.
func (s Sources) allows(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	for _, entry := range s.Repositories {
		e, err := url.Parse(entry)
		if err == nil && under(u, e) {
			return true
		}
	}
	return false
}

// under says whether u is e or below it: the same scheme and host, and e's path or a path
// below it by whole segments.
func under(u, e *url.URL) bool {
	if !strings.EqualFold(u.Scheme, e.Scheme) || !strings.EqualFold(u.Host, e.Host) || u.User != nil {
		return false
	}
	prefix := strings.TrimSuffix(e.Path, "/")
	return u.Path == prefix || strings.HasPrefix(u.Path, prefix+"/")
}

// ociHosts are the hosts of the allowed OCI registries: a registry's HTTP API lives under /v2/
// of its host, not under the chart's oci:// path.
func (s Sources) ociHosts() []string {
	var out []string
	for _, entry := range s.Repositories {
		if e, err := url.Parse(entry); err == nil && e.Scheme == registry.OCIScheme {
			out = append(out, strings.ToLower(e.Host))
		}
	}
	return out
}

// guard refuses every HTTP request to a URL outside the allowed sources: the chart archives a
// repository's index points at (which may be on another host), and redirects. It is the
// transport's Proxy hook, which net/http calls for every request it sends, redirects
// included, before it dials.
func (s Sources) guard(req *http.Request) (*url.URL, error) {
	u := req.URL
	allowed := s.allows(u.String())
	if !allowed && (u.Path == "/v2" || strings.HasPrefix(u.Path, "/v2/")) {
		for _, host := range s.ociHosts() {
			allowed = allowed || strings.EqualFold(u.Host, host)
		}
	}
	if !allowed {
		return nil, fmt.Errorf("%w: a request to %s, which is not under any allowed repository (%s)", ErrChartNotAllowed, u.Redacted(), s.listed())
	}
	return http.ProxyFromEnvironment(req)
}

// transport sends the chart fetches: only to the allowed sources (guard).
func (s Sources) transport() *http.Transport {
	return &http.Transport{
		Proxy:                 s.guard,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: fetchTimeout,
		IdleConnTimeout:       90 * time.Second,
		DisableCompression:    true,
	}
}

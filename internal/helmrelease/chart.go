package helmrelease

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/downloader"
	"helm.sh/helm/v3/pkg/getter"
	"helm.sh/helm/v3/pkg/provenance"
	"helm.sh/helm/v3/pkg/registry"
	"helm.sh/helm/v3/pkg/repo"
)

// ChartRef says where a chart comes from (it mirrors the API's spec.couchdb.provision.chart).
// At most one of Repository, Archive and Path is set:
//   - none: the Apache CouchDB chart built into the operator (BuiltInChartVersion), what a
//     benchmark that names no chart installs; Version, when set, must be its version.
//   - Repository "https://..." (or "http://...") with Name and Version: a classic Helm
//     repository; its index.yaml is fetched, Version resolved in it (an exact version, a semver
//     range, or empty for the latest stable one), and the chart's .tgz downloaded.
//   - Repository "oci://registry/path/couchdb" with Version (a tag, a semver range, or empty to
//     use the reference's own tag): an OCI registry. Name is unused.
//   - Archive: a packaged chart (.tgz) the caller read, e.g. from a ConfigMap; ArchiveSource
//     names where it came from, for messages. Version, when set, must be the chart's.
//   - Path: a chart directory or .tgz archive on the local filesystem (tests and tools that
//     install a chart from a checkout).
type ChartRef struct {
	Repository    string
	Name          string
	Version       string
	Archive       []byte
	ArchiveSource string
	Path          string
}

// builtIn says whether the reference names the chart built into the operator: no source.
func (r ChartRef) builtIn() bool {
	return r.Repository == "" && r.Archive == nil && r.Path == ""
}

// String describes the reference for messages and the results' provenance.
func (r ChartRef) String() string {
	switch {
	case r.builtIn():
		return fmt.Sprintf("chart %s %s built into the operator (%s)", BuiltInChartName, BuiltInChartVersion, BuiltInChartDigest)
	case r.Archive != nil:
		return "chart from " + r.ArchiveSource
	case r.Path != "":
		return "chart at " + r.Path
	case registry.IsOCI(r.Repository):
		return fmt.Sprintf("chart %s version %q", r.Repository, r.Version)
	default:
		return fmt.Sprintf("chart %q version %q from repository %s", r.Name, r.Version, r.Repository)
	}
}

// LoadChart resolves ref, downloads the chart unless it is cached, and loads it. Errors say
// what was tried (the URL, the version, the path) so that a controller can report them as is.
// A library chart, or one whose declared dependencies are missing, is refused: it could not
// be installed.
//
// Cache (under the Manager's cacheDir): repository/ holds the last index.yaml fetched from each
// repository (Helm's own file layout); charts/<source>/<name>-<version>.tgz holds every chart
// downloaded, keyed by the repository URL. A chart version is immutable once published, so an
// exact version that is cached is loaded without any network access; a range or an empty
// version always reads the repository's current index (or the registry's tags) first.
func (m *Manager) LoadChart(ctx context.Context, ref ChartRef) (*chart.Chart, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var (
		ch  *chart.Chart
		err error
	)
	sources := 0
	for _, set := range []bool{ref.Repository != "", ref.Archive != nil, ref.Path != ""} {
		if set {
			sources++
		}
	}
	if sources > 1 {
		return nil, fmt.Errorf("%s: the chart reference sets more than one of repository, archive and path: set one", ref)
	}
	if err := m.opts.Sources.Check(ref); err != nil {
		return nil, err
	}
	switch {
	case ref.builtIn():
		ch, err = loadArchive(ChartRef{Archive: builtInArchive, ArchiveSource: builtInSource, Version: ref.Version})
	case ref.Archive != nil:
		ch, err = loadArchive(ref)
	case ref.Path != "":
		ch, err = loader.Load(ref.Path)
		if err != nil {
			err = fmt.Errorf("loading the chart at %s: %w", ref.Path, err)
		}
	case registry.IsOCI(ref.Repository):
		ch, err = m.loadFromRegistry(ref)
	case strings.HasPrefix(ref.Repository, "https://") || strings.HasPrefix(ref.Repository, "http://"):
		ch, err = m.loadFromRepository(ref)
	default:
		return nil, fmt.Errorf("chart repository %q: want an https://, http:// or oci:// URL", ref.Repository)
	}
	if err != nil {
		return nil, err
	}
	if err := checkInstallable(ch); err != nil {
		return nil, fmt.Errorf("%s: %w", ref, err)
	}
	return ch, nil
}

func checkInstallable(ch *chart.Chart) error {
	if t := ch.Metadata.Type; t != "" && t != "application" {
		return fmt.Errorf("chart %s is a %s chart, which cannot be installed", ch.Name(), t)
	}
	if deps := ch.Metadata.Dependencies; len(deps) > 0 {
		if err := action.CheckDependencies(ch, deps); err != nil {
			return fmt.Errorf("chart %s: %w", ch.Name(), err)
		}
	}
	return nil
}

// loadArchive loads a packaged chart held in memory, checking the version asked for.
func loadArchive(ref ChartRef) (*chart.Chart, error) {
	ch, err := loader.LoadArchive(bytes.NewReader(ref.Archive))
	if err != nil {
		return nil, fmt.Errorf("%s is not a packaged Helm chart (.tgz): %w", ref.ArchiveSource, err)
	}
	if ref.Version != "" && ch.Metadata.Version != ref.Version {
		return nil, fmt.Errorf("%s holds chart %s version %s, not the version %s asked for",
			ref.ArchiveSource, ch.Name(), ch.Metadata.Version, ref.Version)
	}
	return ch, nil
}

// loadFromRepository resolves ref.Name and ref.Version in a classic repository's index.yaml.
func (m *Manager) loadFromRepository(ref ChartRef) (*chart.Chart, error) {
	if ref.Name == "" {
		return nil, fmt.Errorf("chart repository %s: no chart name", ref.Repository)
	}
	key := sourceKey(ref.Repository)
	// One fetch per source at a time: Helm writes the index file in place.
	defer m.chartLocks.lock(key)()
	dir := filepath.Join(m.cacheDir, "charts", key)

	if ch := m.cachedChart(dir, ref.Name, ref.Version); ch != nil {
		return ch, nil
	}

	cr, err := repo.NewChartRepository(&repo.Entry{Name: key, URL: ref.Repository}, m.getters)
	if err != nil {
		return nil, fmt.Errorf("chart repository %s: %w", ref.Repository, err)
	}
	cr.CachePath = filepath.Join(m.cacheDir, "repository")
	indexURL, err := repo.ResolveReferenceURL(ref.Repository, "index.yaml")
	if err != nil {
		return nil, fmt.Errorf("chart repository %s: %w", ref.Repository, err)
	}
	indexFile, err := cr.DownloadIndexFile()
	if err != nil {
		return nil, fmt.Errorf("chart repository %s: fetching %s: %w", ref.Repository, indexURL, err)
	}
	index, err := repo.LoadIndexFile(indexFile)
	if err != nil {
		return nil, fmt.Errorf("chart repository %s: reading %s: %w", ref.Repository, indexURL, err)
	}
	cv, err := index.Get(ref.Name, ref.Version)
	if err != nil {
		return nil, notInIndex(ref, indexURL, index)
	}
	if len(cv.URLs) == 0 {
		return nil, fmt.Errorf("chart %q version %s in %s has no download URL", ref.Name, cv.Version, indexURL)
	}
	if ch := m.cachedChart(dir, ref.Name, cv.Version); ch != nil {
		return ch, nil
	}
	chartURL, err := repo.ResolveReferenceURL(ref.Repository, cv.URLs[0])
	if err != nil {
		return nil, fmt.Errorf("chart %q version %s in %s: %w", ref.Name, cv.Version, indexURL, err)
	}

	saved, cleanup, err := m.download(dir, chartURL, "", getter.WithURL(ref.Repository))
	if err != nil {
		return nil, fmt.Errorf("downloading chart %q version %s from %s: %w", ref.Name, cv.Version, chartURL, err)
	}
	defer cleanup()
	// The index records each archive's SHA-256: check it, so that a truncated or substituted
	// download never enters the cache.
	if cv.Digest != "" {
		digest, err := provenance.DigestFile(saved)
		if err != nil {
			return nil, err
		}
		if !strings.EqualFold(digest, cv.Digest) {
			return nil, fmt.Errorf("chart %s: its SHA-256 is %s but %s says %s", chartURL, digest, indexURL, cv.Digest)
		}
	}
	ch, err := loader.Load(saved)
	if err != nil {
		return nil, fmt.Errorf("chart %s is not a Helm chart: %w", chartURL, err)
	}
	if ch.Name() != ref.Name || ch.Metadata.Version != cv.Version {
		return nil, fmt.Errorf("chart %s is %s %s, but %s lists it as %s %s",
			chartURL, ch.Name(), ch.Metadata.Version, indexURL, ref.Name, cv.Version)
	}
	m.keep(saved, cachedPath(dir, ref.Name, cv.Version))
	return ch, nil
}

// notInIndex says what the index does hold, so that a wrong name or version is easy to fix.
func notInIndex(ref ChartRef, indexURL string, index *repo.IndexFile) error {
	versions, ok := index.Entries[ref.Name]
	if !ok {
		names := make([]string, 0, len(index.Entries))
		for name := range index.Entries {
			names = append(names, name)
		}
		sort.Strings(names)
		return fmt.Errorf("chart %q not found in repository %s (%s lists charts: %s)",
			ref.Name, ref.Repository, indexURL, listSome(names))
	}
	listed := make([]string, 0, len(versions))
	for _, v := range versions {
		listed = append(listed, v.Version)
	}
	if ref.Version == "" {
		return fmt.Errorf("no stable version of chart %q found in repository %s (%s lists versions: %s; give a pre-release's version exactly)",
			ref.Name, ref.Repository, indexURL, listSome(listed))
	}
	return fmt.Errorf("chart %q version %q not found in repository %s (%s lists versions: %s)",
		ref.Name, ref.Version, ref.Repository, indexURL, listSome(listed))
}

func listSome(items []string) string {
	const most = 10
	if len(items) == 0 {
		return "none"
	}
	if len(items) > most {
		return strings.Join(items[:most], ", ") + fmt.Sprintf(" and %d more", len(items)-most)
	}
	return strings.Join(items, ", ")
}

// loadFromRegistry pulls a chart from an OCI registry through Helm's registry client, which
// resolves the version against the repository's tags.
func (m *Manager) loadFromRegistry(ref ChartRef) (*chart.Chart, error) {
	key := sourceKey(ref.Repository)
	defer m.chartLocks.lock(key)()
	dir := filepath.Join(m.cacheDir, "charts", key)
	// The chart's name is the last element of the reference (Helm pushes charts that way).
	name := path.Base(strings.TrimPrefix(ref.Repository, registry.OCIScheme+"://"))
	if i := strings.IndexAny(name, ":@"); i >= 0 {
		name = name[:i]
	}
	if ch := m.cachedChart(dir, name, ref.Version); ch != nil {
		return ch, nil
	}
	saved, cleanup, err := m.download(dir, ref.Repository, ref.Version, getter.WithRegistryClient(m.registry))
	if err != nil {
		return nil, fmt.Errorf("pulling chart %s version %q from its OCI registry: %w", ref.Repository, ref.Version, err)
	}
	defer cleanup()
	ch, err := loader.Load(saved)
	if err != nil {
		return nil, fmt.Errorf("chart %s version %q is not a Helm chart: %w", ref.Repository, ref.Version, err)
	}
	m.keep(saved, cachedPath(dir, name, ch.Metadata.Version))
	return ch, nil
}

// download fetches a chart with Helm's ChartDownloader into a fresh directory under dir and
// returns the archive's path and a cleanup of that directory.
func (m *Manager) download(dir, ref, version string, opts ...getter.Option) (string, func(), error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, err
	}
	tmp, err := os.MkdirTemp(dir, ".download-")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { _ = os.RemoveAll(tmp) }
	dl := downloader.ChartDownloader{
		Out:            io.Discard,
		Verify:         downloader.VerifyNever,
		Getters:        m.getters,
		Options:        opts,
		RegistryClient: m.registry,
		// No repositories.yaml: every repository is given by URL, never by a `helm repo add`
		// name. The file need not exist.
		RepositoryConfig: filepath.Join(m.cacheDir, "repositories.yaml"),
		RepositoryCache:  filepath.Join(m.cacheDir, "repository"),
	}
	saved, _, err := dl.DownloadTo(ref, version, tmp)
	if err != nil {
		cleanup()
		return "", nil, err
	}
	return saved, cleanup, nil
}

// cachedChart loads name-version.tgz from dir when version is one exact version and the file
// is there; nil otherwise (a range, or not cached, or unreadable: then it is fetched again).
func (m *Manager) cachedChart(dir, name, version string) *chart.Chart {
	if _, err := semver.StrictNewVersion(version); err != nil {
		return nil
	}
	file := cachedPath(dir, name, version)
	if _, err := os.Stat(file); err != nil {
		return nil
	}
	ch, err := loader.Load(file)
	if err != nil {
		m.log.Info("ignoring an unreadable cached chart", "file", file, "error", err.Error())
		return nil
	}
	m.log.V(1).Info("using a cached chart", "file", file)
	return ch
}

// keep moves a downloaded archive into the cache; a failure only costs a later download.
func (m *Manager) keep(saved, file string) {
	if err := os.Rename(saved, file); err != nil {
		m.log.Info("could not cache a downloaded chart", "file", file, "error", err.Error())
	}
}

func cachedPath(dir, name, version string) string {
	return filepath.Join(dir, fmt.Sprintf("%s-%s.tgz", name, version))
}

// sourceKey names a chart source in the cache: a hash of its URL, which may hold characters
// a file name cannot.
func sourceKey(source string) string {
	sum := sha256.Sum256([]byte(strings.TrimSuffix(source, "/")))
	return "src-" + hex.EncodeToString(sum[:8])
}

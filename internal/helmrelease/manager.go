// Package helmrelease installs and uninstalls one Helm release at a time through the Helm Go SDK
// (helm.sh/helm/v3), for the operator that provisions CouchDB with the Apache CouchDB chart.
//
// Every call is idempotent and returns at once: Install never waits for pods (readiness is the
// caller's), Uninstall never waits for objects to go. Releases are stored as Secrets, Helm's
// default storage driver, in the namespace of the release, so `helm list -n NAMESPACE` shows them.
//
// A Manager made with Options.Installer is confined, as the operator runs it: every call for a
// release acts as that ServiceAccount of the release's namespace (Helm's reads, the chart's
// `lookup`s, the objects it creates, the release records), the rendered objects are held to
// what a CouchDB release may create in that namespace (confinement), hooks are not run and
// CRDs not installed, and charts come only from the allowed Sources. Without it a Manager acts
// with its config's own identity and installs any chart: tools and tests that install the
// operator's own chart.
package helmrelease

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/getter"
	"helm.sh/helm/v3/pkg/registry"
	relstatus "helm.sh/helm/v3/pkg/release" // aliased: `release` names a release here
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/client-go/rest"
)

// State is where a release stands, reduced from Helm's release statuses to what a controller
// acts on.
type State string

const (
	// NotInstalled: Helm has no record of the release in the namespace.
	NotInstalled State = "NotInstalled"
	// Deployed: Helm created every object of the chart (the pods may not be ready yet).
	Deployed State = "Deployed"
	// Pending: an operation is under way or was cut short (pending-install, pending-upgrade,
	// pending-rollback, uninstalling). Helm refuses other operations on it meanwhile; one left
	// behind by a crash stays Pending until the release is uninstalled.
	Pending State = "Pending"
	// Failed: Helm recorded the release as failed (creating an object failed, or a hook did);
	// Description says why. Uninstall it to try again.
	Failed State = "Failed"
)

// Status is the last recorded revision of a release.
type Status struct {
	State State
	// Description is Helm's description of the last operation ("Install complete", or the error).
	Description string
	// ChartVersion and AppVersion are those of the chart the release was installed from.
	ChartVersion string
	AppVersion   string
}

// ErrReleaseFailed is wrapped by Install's error when the release is (or was already) recorded
// as failed by Helm.
var ErrReleaseFailed = errors.New("helm release failed")

// hookTimeout bounds chart hooks (Helm runs them even without --wait, and waits for hook Jobs
// to finish). The Apache chart's hooks (autoSetup, placementConfig) are off by default, and a
// confined Manager runs none.
const hookTimeout = 5 * time.Minute

// Deadlines of a call, so that no chart holds a caller without end: installTimeout bounds an
// Install (the chart's fetch, its rendering and the objects' creation; Helm goes on in the
// background past it and records the release as failed), fetchTimeout each HTTP request of a
// chart's fetch, and requestTimeout each request Helm sends to the API server.
const (
	installTimeout = 2 * time.Minute
	fetchTimeout   = time.Minute
	requestTimeout = 30 * time.Second
)

// Options make a Manager confined (Installer) and say which chart sources it may fetch from.
type Options struct {
	// Installer is the ServiceAccount, in each release's namespace, that every call for that
	// release acts as; the Manager's config must be allowed to impersonate it. Set, the
	// Manager is confined (see the package's doc); empty, it acts as its config's identity.
	Installer string
	// Sources are the chart sources allowed besides the built-in chart.
	Sources Sources
}

// storageDriver is Helm's default: one Secret per revision, type helm.sh/release.v1.
const storageDriver = "secret"

// Manager installs charts as Helm releases, as the installer ServiceAccount of each release's
// namespace when confined. It is safe for concurrent use: each call builds its own Helm
// action.Configuration, and calls for the same release (and fetches of the same chart source)
// are serialised.
type Manager struct {
	restConfig *rest.Config
	cacheDir   string
	log        logr.Logger
	opts       Options
	// getters are Helm's built-in http(s) and oci getters, without plugins: an operator has no
	// helm plugin directory.
	getters getter.Providers
	// registry pulls charts from OCI registries; its credentials file lives in cacheDir.
	registry *registry.Client

	releaseLocks keyedLocks
	chartLocks   keyedLocks
}

// New makes a Manager that talks to the API server of cfg. cacheDir holds downloaded charts
// and repository indexes (it is created if missing; it must be writable).
func New(cfg *rest.Config, cacheDir string, log logr.Logger, opts Options) (*Manager, error) {
	if cfg == nil {
		return nil, errors.New("helmrelease: no rest.Config")
	}
	if cacheDir == "" {
		return nil, errors.New("helmrelease: no cache directory")
	}
	abs, err := filepath.Abs(cacheDir)
	if err != nil {
		return nil, err
	}
	for _, dir := range []string{abs, filepath.Join(abs, "charts"), filepath.Join(abs, "repository"), filepath.Join(abs, "registry")} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("helmrelease: creating the chart cache: %w", err)
		}
	}
	// Helm would otherwise default the credentials file to $HOME/.config/helm: keep it in the
	// operator's writable directory. It need not exist (anonymous pulls).
	// Every fetch goes through a transport that refuses what the sources do not allow.
	transport := opts.Sources.transport()
	reg, err := registry.NewClient(
		registry.ClientOptCredentialsFile(filepath.Join(abs, "registry", "config.json")),
		registry.ClientOptEnableCache(true),
		registry.ClientOptHTTPClient(&http.Client{Transport: transport, Timeout: fetchTimeout}),
	)
	if err != nil {
		return nil, fmt.Errorf("helmrelease: creating the OCI registry client: %w", err)
	}
	return &Manager{
		restConfig: rest.CopyConfig(cfg),
		cacheDir:   abs,
		log:        log,
		opts:       opts,
		getters:    getter.Getters(getter.WithTransport(transport), getter.WithTimeout(fetchTimeout)),
		registry:   reg,
	}, nil
}

// Status reports the last revision of release in namespace; NotInstalled when Helm has none.
func (m *Manager) Status(ctx context.Context, namespace, release string) (Status, error) {
	if err := ctx.Err(); err != nil {
		return Status{}, err
	}
	cfg, err := m.actionConfig(namespace)
	if err != nil {
		return Status{}, err
	}
	return releaseStatus(cfg, namespace, release)
}

// Install installs the chart of ref as release in namespace with values, unless Helm already
// has a record of that release: then nothing is changed (no upgrade, whatever the chart or
// values) and its Status is returned, with an error wrapping ErrReleaseFailed if it failed.
//
// values may hold API types (e.g. []corev1.EnvVar, resource.Quantity): they are normalised
// through JSON, as Helm does with values files. labels are stored on the release record (Helm's
// storage labels, like `helm install --labels`) so that a release can be traced back.
//
// Install returns once the objects are created: it never waits for pods. A release found
// Pending is returned as is, without an error: the caller polls again (or uninstalls one left
// behind by a crash). On an error the returned Status says what is left: NotInstalled (the
// chart could not be fetched or rendered, or an object already exists: nothing was created)
// or Failed (Helm recorded the failure; Uninstall before trying again). If ctx ends while Helm
// is creating objects, Helm records the release as failed and goes on in the background.
func (m *Manager) Install(ctx context.Context, namespace, release string, ref ChartRef, values map[string]any,
	labels map[string]string) (Status, error) {
	defer m.releaseLocks.lock(namespace + "/" + release)()
	if err := ctx.Err(); err != nil {
		return Status{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, installTimeout)
	defer cancel()
	cfg, err := m.actionConfig(namespace)
	if err != nil {
		return Status{}, err
	}
	st, err := releaseStatus(cfg, namespace, release)
	if err != nil {
		return Status{}, err
	}
	if st.State != NotInstalled {
		if st.State == Failed {
			return st, fmt.Errorf("%w: release %q in namespace %q: %s", ErrReleaseFailed, release, namespace, st.Description)
		}
		return st, nil
	}

	ch, err := m.LoadChart(ctx, ref)
	if err != nil {
		return st, err
	}
	vals, err := m.normaliseValues(values)
	if err != nil {
		return st, fmt.Errorf("helm values for release %q: %w", release, err)
	}

	install := action.NewInstall(cfg)
	install.Namespace = namespace
	install.ReleaseName = release
	install.Labels = labels
	install.Timeout = hookTimeout
	if m.opts.Installer != "" {
		if n := countTemplates(ch); n > MaxChartTemplates {
			return st, &RefusedError{Rule: fmt.Sprintf("%s has %d templates; a release may have at most %d", ref, n, MaxChartTemplates)}
		}
		if install.PostRenderer, err = newConfinement(namespace); err != nil {
			return st, err
		}
		// Helm neither post-renders hooks nor holds CRDs to a namespace.
		install.DisableHooks = true
		install.SkipCRDs = true
	}
	// Wait stays false: readiness is the caller's. Atomic stays false too: a failed release is
	// kept so that its description can be reported, and the caller decides to uninstall it.
	m.log.Info("installing Helm release", "namespace", namespace, "release", release,
		"chart", ch.Name(), "chartVersion", ch.Metadata.Version)
	_, installErr := install.RunWithContext(ctx, ch, vals)
	if installErr == nil {
		return releaseStatus(cfg, namespace, release)
	}
	// Read back what Helm left, so the caller knows whether to uninstall before retrying.
	st, err = releaseStatus(cfg, namespace, release)
	if err != nil {
		return Status{}, errors.Join(installErr, err)
	}
	if st.State == Failed {
		installErr = fmt.Errorf("%w: %w", ErrReleaseFailed, installErr)
	}
	return st, fmt.Errorf("installing chart %s %s as release %q in namespace %q: %w",
		ch.Name(), ch.Metadata.Version, release, namespace, installErr)
}

// Uninstall deletes release and the objects of its manifest, whatever its state, and forgets
// its history. A release Helm has no record of is not an error. It waits for nothing: objects
// are deleted with background propagation. PersistentVolumeClaims made by a StatefulSet's
// volumeClaimTemplates are not part of a manifest and stay (as with `helm uninstall`).
func (m *Manager) Uninstall(ctx context.Context, namespace, release string) error {
	defer m.releaseLocks.lock(namespace + "/" + release)()
	if err := ctx.Err(); err != nil {
		return err
	}
	cfg, err := m.actionConfig(namespace)
	if err != nil {
		return err
	}
	uninstall := action.NewUninstall(cfg)
	uninstall.IgnoreNotFound = true
	uninstall.DeletionPropagation = "background"
	uninstall.Timeout = hookTimeout
	uninstall.DisableHooks = m.opts.Installer != ""
	m.log.Info("uninstalling Helm release", "namespace", namespace, "release", release)
	if _, err := uninstall.Run(release); err != nil {
		return fmt.Errorf("uninstalling release %q in namespace %q: %w", release, namespace, err)
	}
	return nil
}

// actionConfig is a fresh Helm configuration for one call: Helm's storage and kube client are
// bound to one namespace, so configurations are never shared between calls. A confined
// Manager's acts as the installer ServiceAccount of that namespace.
func (m *Manager) actionConfig(namespace string) (*action.Configuration, error) {
	if namespace == "" {
		return nil, errors.New("helmrelease: no namespace")
	}
	cfg := rest.CopyConfig(m.restConfig)
	cfg.Timeout = requestTimeout
	if m.opts.Installer != "" {
		cfg.Impersonate = rest.ImpersonationConfig{UserName: serviceaccount.MakeUsername(namespace, m.opts.Installer)}
	}
	clients, err := newRESTClientGetter(cfg, namespace)
	if err != nil {
		return nil, fmt.Errorf("helmrelease: Kubernetes clients: %w", err)
	}
	ac := new(action.Configuration)
	log := m.log.WithValues("namespace", namespace)
	debug := func(format string, v ...any) { log.V(1).Info(fmt.Sprintf(format, v...)) }
	if err := ac.Init(clients, namespace, storageDriver, debug); err != nil {
		return nil, fmt.Errorf("helmrelease: Helm configuration: %w", err)
	}
	ac.RegistryClient = m.registry
	return ac, nil
}

func releaseStatus(cfg *action.Configuration, namespace, name string) (Status, error) {
	rel, err := action.NewStatus(cfg).Run(name)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return Status{State: NotInstalled}, nil
	}
	if err != nil {
		return Status{}, fmt.Errorf("reading Helm release %q in namespace %q: %w", name, namespace, err)
	}
	st := Status{State: Failed}
	if rel.Info != nil {
		st = Status{State: stateOf(rel.Info.Status), Description: rel.Info.Description}
	}
	if rel.Chart != nil && rel.Chart.Metadata != nil {
		st.ChartVersion = rel.Chart.Metadata.Version
		st.AppVersion = rel.Chart.Metadata.AppVersion
	}
	return st, nil
}

func stateOf(s relstatus.Status) State {
	switch s {
	case relstatus.StatusDeployed:
		return Deployed
	case relstatus.StatusPendingInstall, relstatus.StatusPendingUpgrade, relstatus.StatusPendingRollback, relstatus.StatusUninstalling:
		return Pending
	case relstatus.StatusUninstalled:
		// Only kept with --keep-history, which this package never uses.
		return NotInstalled
	default:
		// failed, unknown, and superseded (never the last revision of a sound history).
		return Failed
	}
}

// normaliseValues turns values into what Helm reads from a values file: nested
// map[string]any, []any, float64, string, bool. Helm merges and templates only those. A
// confined Manager refuses values of more than MaxValuesBytes.
func (m *Manager) normaliseValues(values map[string]any) (map[string]any, error) {
	out := map[string]any{}
	if len(values) == 0 {
		return out, nil
	}
	data, err := json.Marshal(values)
	if err != nil {
		return nil, err
	}
	if m.opts.Installer != "" && len(data) > MaxValuesBytes {
		return nil, &RefusedError{Rule: fmt.Sprintf("the values are %d bytes as JSON; a release may have at most %d", len(data), MaxValuesBytes)}
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// keyedLocks serialises work per key (a release, a chart source) and forgets keys nobody
// holds, so that it does not grow with every benchmark ever run.
type keyedLocks struct {
	mu    sync.Mutex
	locks map[string]*keyedLock
}

type keyedLock struct {
	sync.Mutex
	holders int
}

// lock takes the lock of key and returns its release.
func (k *keyedLocks) lock(key string) (unlock func()) {
	k.mu.Lock()
	if k.locks == nil {
		k.locks = map[string]*keyedLock{}
	}
	l := k.locks[key]
	if l == nil {
		l = &keyedLock{}
		k.locks[key] = l
	}
	l.holders++
	k.mu.Unlock()

	l.Lock()
	return func() {
		l.Unlock()
		k.mu.Lock()
		l.holders--
		if l.holders == 0 {
			delete(k.locks, key)
		}
		k.mu.Unlock()
	}
}

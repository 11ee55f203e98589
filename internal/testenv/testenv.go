// Package testenv starts a real kube-apiserver and etcd (controller-runtime's envtest) with
// the project's CRDs installed, for the test suites that need an API server.
package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
)

// Env is a running API server and a client for it.
type Env struct {
	Config *rest.Config
	Client client.Client
	Scheme *runtime.Scheme
	env    *envtest.Environment

	operatorRBAC    sync.Once
	operatorRBACErr error
}

// Run starts the API server, runs the package's tests and stops it: call it from TestMain
// as os.Exit(testenv.Run(m, &env)).
func Run(m *testing.M, out **Env) int {
	e, err := start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "testenv:", err)
		return 1
	}
	*out = e
	code := m.Run()
	if err := e.env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "testenv: stopping the API server:", err)
	}
	return code
}

func start() (*Env, error) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		return nil, errors.New("KUBEBUILDER_ASSETS is not set: run the tests with `make test`, " +
			"which builds kube-apiserver and etcd into bin/k8s and points KUBEBUILDER_ASSETS at them")
	}
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(benchv1.AddToScheme(scheme))

	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		Scheme:                scheme,
		// envtest's default (20 s) is for an idle machine: on these shared 2-core machines,
		// at load averages of 80 and more, kube-apiserver took longer to answer its first
		// health check and whole test packages failed before a test ran.
		ControlPlaneStartTimeout: 3 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting kube-apiserver and etcd from %s: %w", os.Getenv("KUBEBUILDER_ASSETS"), err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		_ = env.Stop()
		return nil, err
	}
	return &Env{Config: cfg, Client: c, Scheme: scheme, env: env}, nil
}

// Namespace creates a namespace with a generated name for one test.
func (e *Env) Namespace(t testing.TB) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "test-"}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.Client.Create(ctx, ns); err != nil {
		t.Fatalf("creating a namespace: %v", err)
	}
	return ns.Name
}

// ModuleRoot is the directory of the project's go.mod.
func ModuleRoot(t testing.TB) string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// OperatorServiceAccount is the identity OperatorConfig acts as.
const OperatorServiceAccount = "system:serviceaccount:couchbench-system:couchbench-manager"

// OperatorConfig is a config for the API server that acts as the operator's service account,
// bound to the ClusterRole the project generates from its RBAC markers (config/rbac/role.yaml;
// the installer ClusterRole it may bind, InstallerClusterRole, exists too)
// and to nothing else: a verb the operator uses but does not ask for is refused, as in a
// real cluster. The role and binding are made once per API server.
func (e *Env) OperatorConfig(t testing.TB) *rest.Config {
	t.Helper()
	e.operatorRBAC.Do(func() { e.operatorRBACErr = e.installOperatorRBAC() })
	if e.operatorRBACErr != nil {
		t.Fatalf("installing the operator's RBAC: %v", e.operatorRBACErr)
	}
	cfg := rest.CopyConfig(e.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: OperatorServiceAccount}
	return cfg
}

// Kubeconfig writes a kubeconfig file with cfg's server, credentials and impersonation (an
// identity such as OperatorConfig's) and returns its path: for a manager run as its own
// process, which takes a kubeconfig, not a rest.Config.
func Kubeconfig(t testing.TB, cfg *rest.Config) string {
	t.Helper()
	const name = "envtest-operator"
	kubeconfig := clientcmdapi.NewConfig()
	kubeconfig.Clusters[name] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kubeconfig.AuthInfos[name] = &clientcmdapi.AuthInfo{
		// envtest's admin identity, whichever of these it uses...
		ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData,
		Token: cfg.BearerToken, Username: cfg.Username, Password: cfg.Password,
		// ...acting as the operator's service account.
		Impersonate: cfg.Impersonate.UserName, ImpersonateUID: cfg.Impersonate.UID,
		ImpersonateGroups: cfg.Impersonate.Groups, ImpersonateUserExtra: cfg.Impersonate.Extra,
	}
	kubeconfig.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	kubeconfig.CurrentContext = name
	path := filepath.Join(t.TempDir(), "operator.kubeconfig")
	if err := clientcmd.WriteToFile(*kubeconfig, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// InstallerClusterRole and CPUReaderClusterRole are the ClusterRoles OperatorConfig's identity
// may bind (config/rbac/installer_role.yaml, config/cpu-cost/cpu_reader_role.yaml, named as
// config/default names them).
const (
	InstallerClusterRole = "couchbench-installer"
	CPUReaderClusterRole = "couchbench-cpu-reader"
)

func (e *Env) installOperatorRBAC() error {
	var role, installer, cpuReader rbacv1.ClusterRole
	if err := readRole("rbac/role.yaml", &role); err != nil {
		return err
	}
	if err := readRole("rbac/installer_role.yaml", &installer); err != nil {
		return err
	}
	if err := readRole("cpu-cost/cpu_reader_role.yaml", &cpuReader); err != nil {
		return err
	}
	role.Name = "couchbench-manager-role"
	installer.Name = InstallerClusterRole
	cpuReader.Name = CPUReaderClusterRole
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "couchbench-manager-rolebinding"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "couchbench-system", Name: "couchbench-manager"}},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, obj := range []client.Object{&role, &installer, &cpuReader, binding} {
		if err := e.Client.Create(ctx, obj); err != nil {
			return err
		}
	}
	return nil
}

// readRole reads a ClusterRole of config/, by its path there.
func readRole(name string, role *rbacv1.ClusterRole) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	data, err := os.ReadFile(filepath.Join(root, "config", name))
	if err != nil {
		return err
	}
	if err := yaml.UnmarshalStrict(data, role); err != nil {
		return fmt.Errorf("config/rbac/%s: %w", name, err)
	}
	return nil
}

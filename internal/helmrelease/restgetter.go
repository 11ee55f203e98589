package helmrelease

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// restClientGetter gives Helm's Kubernetes client the operator's own rest.Config instead of a
// kubeconfig file. Helm builds every client it needs (typed, dynamic, discovery, REST mapper)
// from this interface, exactly as the helm CLI does from its --kubeconfig/--namespace flags.
//
// One is made per call: the namespace is the call's, and the discovery cache lives only as long
// as the call, so a CRD installed since the last call is always seen (Helm invalidates the
// cache before reading capabilities anyway).
type restClientGetter struct {
	config    *rest.Config
	namespace string
	discovery discovery.CachedDiscoveryInterface
}

var _ genericclioptions.RESTClientGetter = (*restClientGetter)(nil)

func newRESTClientGetter(config *rest.Config, namespace string) (*restClientGetter, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(rest.CopyConfig(config))
	if err != nil {
		return nil, err
	}
	return &restClientGetter{config: config, namespace: namespace, discovery: memory.NewMemCacheClient(dc)}, nil
}

// ToRESTConfig returns a copy: Helm and kubectl's factory may set fields on it (user agent,
// group version, negotiated serializer), and the operator's config is shared.
func (g *restClientGetter) ToRESTConfig() (*rest.Config, error) {
	return rest.CopyConfig(g.config), nil
}

func (g *restClientGetter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	return g.discovery, nil
}

// ToRESTMapper maps the kinds of a chart's manifests to resources lazily, from discovery, and
// resets itself when a kind is unknown (a CRD installed since the mapper was filled).
func (g *restClientGetter) ToRESTMapper() (meta.RESTMapper, error) {
	return restmapper.NewDeferredDiscoveryRESTMapper(g.discovery), nil
}

// ToRawKubeConfigLoader is what kubectl's factory and Helm's kube client ask for the default
// namespace of the objects they build: it must answer the call's namespace, or a chart's
// objects (which carry no namespace) would be created in "default".
func (g *restClientGetter) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	return namespaceClientConfig{getter: g}
}

// namespaceClientConfig is the smallest clientcmd.ClientConfig there is: no kubeconfig file,
// the operator's rest.Config and the call's namespace.
type namespaceClientConfig struct {
	getter *restClientGetter
}

func (c namespaceClientConfig) RawConfig() (clientcmdapi.Config, error) {
	return *clientcmdapi.NewConfig(), nil
}

func (c namespaceClientConfig) ClientConfig() (*rest.Config, error) {
	return c.getter.ToRESTConfig()
}

// Namespace reports the namespace as explicitly set (true), as `helm --namespace` does.
func (c namespaceClientConfig) Namespace() (string, bool, error) {
	return c.getter.namespace, true, nil
}

// ConfigAccess is nil, as for client-go's own DirectClientConfig built without a file: nothing
// here reads or writes kubeconfig files.
func (c namespaceClientConfig) ConfigAccess() clientcmd.ConfigAccess {
	return nil
}

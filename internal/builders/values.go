package builders

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
)

// CouchDB runs as this user in the official image; the pod runs as it from the start so
// that the restricted Pod Security profile holds (no root, no privilege escalation).
const couchdbUID = 5984

// HelmValues are the Apache CouchDB chart's values for one arm, in the chart's own names
// (couchdb-helm couchdb/values.yaml), with the user's merged last: the benchmark's values,
// then the arm's ini settings (queryServers[].config), then the arm's values.
func HelmValues(bench *benchv1.CouchBenchmark, qs benchv1.QueryServer) (map[string]any, error) {
	p := bench.Spec.CouchDB.Provision
	if p == nil {
		return nil, fmt.Errorf("benchmark %s provisions no CouchDB", bench.Name)
	}
	image := map[string]any{"repository": p.Image.Repository, "tag": p.Image.Tag, "pullPolicy": "IfNotPresent"}
	if qs.Image != "" {
		if strings.Contains(qs.Image, "@") {
			return nil, fmt.Errorf("queryServers[%s].image %q: the chart takes repository:tag, not a digest", qs.Name, qs.Image)
		}
		repo, tag := splitImage(qs.Image)
		image["repository"], image["tag"] = repo, tag
	}

	couchdb := map[string]any{"uuid": clusterUUID(bench, qs.Name)}
	if p.ClusterSize == 1 {
		// A one-node cluster sets itself up (system databases) instead of waiting for
		// _cluster_setup.
		couchdb["single_node"] = true
	}
	if qs.Engine != "" {
		couchdb["js_engine"] = string(qs.Engine)
	}
	config := map[string]any{"couchdb": couchdb}
	if qs.Language == "erlang" {
		config["native_query_servers"] = map[string]any{"enable_erlang_query_server": true}
	}

	var env []any
	if qs.Command != "" {
		env = append(env, map[string]any{"name": QueryServerEnv(qs.Language), "value": qs.Command})
	}
	for _, e := range qs.Env {
		v, err := toValue(e)
		if err != nil {
			return nil, err
		}
		env = append(env, v)
	}

	values := map[string]any{
		"clusterSize": int64(p.ClusterSize),
		"image":       image,
		// The chart's init container only copies ini files with sh and cp, which the CouchDB
		// image has: running it from that image means no second image to pull (the chart's
		// default is busybox:latest, always pulled), so a cluster that can run CouchDB can run
		// the init container too. values.initImage overrides it.
		"initImage":         map[string]any{"repository": image["repository"], "tag": image["tag"], "pullPolicy": "IfNotPresent"},
		"createAdminSecret": false,
		"extraSecretName":   AdminSecretName(bench, qs.Name),
		"couchdbConfig":     config,
		"persistentVolume":  map[string]any{"enabled": false},
		"podSecurityContext": map[string]any{
			"runAsNonRoot": true, "runAsUser": int64(couchdbUID), "runAsGroup": int64(couchdbUID), "fsGroup": int64(couchdbUID),
			"seccompProfile": map[string]any{"type": "RuntimeDefault"},
		},
		"containerSecurityContext": map[string]any{
			"allowPrivilegeEscalation": false, "capabilities": map[string]any{"drop": []any{dropAll}},
		},
		// CouchDB answers /_up seconds after its container starts, but the chart probes it
		// every 10 s, so a new pod waited for its second probe to be ready and the run with
		// it. Probing every 2 s, 15 failures in a row still make the same 30 s before a busy
		// node is taken out of its Service.
		"readinessProbe": map[string]any{"periodSeconds": int64(2), "failureThreshold": int64(15)},
	}
	if len(env) > 0 {
		values["extraEnv"] = env
	}
	if s := p.Storage; s != nil {
		pv := map[string]any{"enabled": true, "size": s.Size.String()}
		if s.StorageClassName != nil {
			pv["storageClass"] = *s.StorageClassName
		}
		values["persistentVolume"] = pv
	}
	if len(p.Resources.Limits) > 0 || len(p.Resources.Requests) > 0 {
		r, err := toValue(p.Resources)
		if err != nil {
			return nil, err
		}
		values["resources"] = r
	}
	// The chart's names for pod placement are Kubernetes' own.
	for key, set := range map[string]any{"nodeSelector": p.NodeSelector, "tolerations": p.Tolerations} {
		v, err := toValue(set)
		if err != nil {
			return nil, err
		}
		if v != nil {
			values[key] = v
		}
	}
	// The user's affinity, with the operator's preferences beside it: a clustered CouchDB one
	// pod per node, as a cluster-scale test means it; and a later arm on the first arm's
	// nodes, so that arms are compared on the same hardware. Arms provisioned at once
	// (interleaved) prefer the nodes of the first arm's pods; one after the other, the nodes
	// where the first arm's pods were.
	affinity := p.Affinity.DeepCopy()
	if affinity == nil {
		affinity = &corev1.Affinity{}
	}
	spreadPodsOf(affinity, ReleaseName(bench, qs.Name))
	switch first := bench.Spec.QueryServers[0].Name; {
	case qs.Name == first:
	case bench.Spec.ArmOrder != benchv1.ArmsSequential:
		preferPodsOf(affinity, ReleaseName(bench, first))
	case len(bench.Status.CouchDBNodes) > 0:
		preferNodes(affinity, bench.Status.CouchDBNodes)
	}
	a, err := toValue(affinity)
	if err != nil {
		return nil, err
	}
	values["affinity"] = a
	// Then the user's: the benchmark's values, the arm's ini settings, the arm's values.
	values = runtime.DeepCopyJSON(values)
	if err := mergeJSON(values, p.Values, "spec.couchdb.provision.values"); err != nil {
		return nil, err
	}
	if len(qs.Config) > 0 {
		sections := map[string]any{}
		for section, keys := range qs.Config {
			kv := map[string]any{}
			for k, v := range keys {
				kv[k] = v
			}
			sections[section] = kv
		}
		mergeValues(values, map[string]any{"couchdbConfig": sections})
	}
	if err := mergeJSON(values, qs.Values, fmt.Sprintf("queryServers[%s].values", qs.Name)); err != nil {
		return nil, err
	}
	return values, nil
}

// QueryServerEnv is the variable through which the CouchDB image registers an external
// query server for a language: COUCHDB_QUERY_SERVER_<LANGUAGE>.
func QueryServerEnv(language string) string {
	return "COUCHDB_QUERY_SERVER_" + strings.ToUpper(language)
}

// clusterUUID is the server uuid the chart requires ([couchdb] uuid): stable for the arm of
// this benchmark, so that a re-render does not change it.
func clusterUUID(bench *benchv1.CouchBenchmark, arm string) string {
	sum := sha256.Sum256([]byte(string(bench.UID) + "/" + arm))
	return hex.EncodeToString(sum[:16])
}

// splitImage splits "repo[:tag]"; a registry port is not a tag.
func splitImage(image string) (repo, tag string) {
	i := strings.LastIndex(image, ":")
	if i < 0 || strings.Contains(image[i:], "/") {
		return image, "latest"
	}
	return image[:i], image[i+1:]
}

// mergeJSON merges free-form values from the spec (field names them in errors) into dst.
func mergeJSON(dst map[string]any, src *apiextensionsv1.JSON, field string) error {
	if src == nil || len(src.Raw) == 0 {
		return nil
	}
	var user map[string]any
	if err := json.Unmarshal(src.Raw, &user); err != nil {
		return fmt.Errorf("%s: %w", field, err)
	}
	mergeValues(dst, user)
	return nil
}

// mergeValues merges src into dst the way Helm merges values files: maps merge key by key,
// anything else in src replaces dst's.
func mergeValues(dst, src map[string]any) {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				mergeValues(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
}

// toValue turns an API struct into plain JSON values, as Helm values are.
func toValue(v any) (any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	err = json.Unmarshal(data, &out)
	return out, err
}

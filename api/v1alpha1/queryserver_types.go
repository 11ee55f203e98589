package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// QueryServer is one arm of the comparison: a view language and the query server that runs
// it and, for a provisioned CouchDB, the CouchDB the arm runs on: its image (another version,
// a patched build), ini settings and chart values. So "3.4.3 vs 3.5.1", "patched vs
// unpatched" or "q=2 vs q=8" is one benchmark whose arms differ only there.
// +kubebuilder:validation:XValidation:rule="has(self.language) || has(self.preset)",message="set language or preset (spidermonkey, quickjs, erlang, couchpy, couchpy-simplejson, pypy)"
// +kubebuilder:validation:XValidation:rule="!has(self.engine) || (has(self.language) ? self.language == 'javascript' : self.preset in ['spidermonkey', 'quickjs'])",fieldPath=".engine",message="engine applies only to language javascript (spidermonkey or quickjs)"
// +kubebuilder:validation:XValidation:rule="!has(self.command) || !(has(self.language) ? self.language in ['javascript', 'erlang'] : self.preset in ['spidermonkey', 'quickjs', 'erlang'])",fieldPath=".command",message="command registers an external query server; javascript and erlang are built into CouchDB and take none"
type QueryServer struct {
	// Name identifies the arm in results and in the names of the objects made for it.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=20
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// Preset fills in language, engine, image and command for a known query server, so
	// that an arm is one word: spidermonkey, quickjs (javascript engines), erlang (native,
	// needs allowErlangViews), couchpy, couchpy-simplejson, pypy (language python; a
	// provisioned CouchDB gets its query server from the preset's image and command). On an
	// existing CouchDB a preset installs nothing: it says what the arm expects the server to
	// run (CPython or PyPy, couchpy's JSON module json or simplejson, the JavaScript engine),
	// which the runner checks before the arm's first step (see runtimeMismatch). Fields set
	// next to a preset override it.
	// +optional
	Preset Preset `json:"preset,omitempty"`

	// Language is the design documents' view language: javascript and erlang are built
	// into CouchDB; any other (python, ...) is an external query server registered with
	// CouchDB under that name. Required unless a preset gives it.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^[a-z][a-z0-9_]*$`
	Language string `json:"language,omitempty"`

	// Engine is the JavaScript engine for language javascript. Unset: the server's
	// configured engine (CouchDB's default is spidermonkey).
	// +optional
	Engine JavaScriptEngine `json:"engine,omitempty"`

	// Image is this arm's CouchDB image, repository:tag: another CouchDB version or build
	// (couchdb:3.5.1), or one that carries an external query server (the Python presets set
	// theirs). Provisioned CouchDB only; unset uses couchdb.provision.image.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image,omitempty"`

	// Config is CouchDB configuration of this arm's CouchDB: ini sections of keys and values,
	// e.g. {"couchdb": {"max_document_size": "8000000"}, "smoosh": {"state_dir": "/tmp"}},
	// merged over the benchmark's couchdb.provision.values. Provisioned CouchDB only.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	Config map[string]map[string]string `json:"config,omitempty"`

	// Values are Helm values of this arm's release, merged last, over
	// couchdb.provision.values. Provisioned CouchDB only.
	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	Values *apiextensionsv1.JSON `json:"values,omitempty"`

	// Shards overrides dataset.shards (CouchDB's q) for this arm's databases.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	Shards *int32 `json:"shards,omitempty"`

	// Command is the command line CouchDB runs for this language, registered through the
	// COUCHDB_QUERY_SERVER_<LANGUAGE> environment variable (e.g.
	// "/usr/local/bin/couchpy --json-module=simplejson"). Provisioned CouchDB only;
	// unset when the image registers the language itself.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Command string `json:"command,omitempty"`

	// Env is extra environment for the CouchDB containers of this arm. Provisioned
	// CouchDB only.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	Env []corev1.EnvVar `json:"env,omitempty"`
}

// Preset names a known query server.
// +kubebuilder:validation:Enum=spidermonkey;quickjs;erlang;couchpy;couchpy-simplejson;pypy
type Preset string

const (
	PresetSpiderMonkey      Preset = "spidermonkey"
	PresetQuickJS           Preset = "quickjs"
	PresetErlang            Preset = "erlang"
	PresetCouchpy           Preset = "couchpy"
	PresetCouchpySimplejson Preset = "couchpy-simplejson"
	PresetPyPy              Preset = "pypy"
)

// JavaScriptEngine is CouchDB's JavaScript engine ([couchdb] js_engine).
// +kubebuilder:validation:Enum=spidermonkey;quickjs
type JavaScriptEngine string

const (
	EngineSpiderMonkey JavaScriptEngine = "spidermonkey"
	EngineQuickJS      JavaScriptEngine = "quickjs"
)

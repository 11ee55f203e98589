package v1alpha1

import corev1 "k8s.io/api/core/v1"

// QueryServer is one arm of the comparison: a view language and the query server that
// runs it.
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
	// needs allowErlangViews), couchpy, couchpy-simplejson, pypy (Python query servers,
	// provisioned CouchDB only: they bring their own CouchDB image). Fields set next to a
	// preset override it.
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

	// Image is a CouchDB image that carries this arm's external query server (e.g. the
	// official image plus couchpy). Provisioned CouchDB only; unset uses
	// couchdb.provision.image.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image,omitempty"`

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

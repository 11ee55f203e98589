package v1alpha1

// Images of the Python query-server presets: the official CouchDB image plus couchpy (and
// simplejson), or plus PyPy; built from images/couchdb-python and images/couchdb-pypy. Each
// registers its query server through COUCHDB_QUERY_SERVER_PYTHON.
const (
	CouchDBPythonImage = "couchbench/couchdb-python:3.4.3"
	CouchDBPyPyImage   = "couchbench/couchdb-pypy:3.4.3"
)

const languagePython = "python"

// presets are what each preset fills in. couchpy (CouchDB 1.2 on PyPI) decodes with simplejson
// whenever it is installed unless told otherwise, and the Python image has it for the
// couchpy-simplejson arm: the couchpy arm names the standard library's json, or the two arms
// would measure the same thing.
var presets = map[Preset]QueryServer{
	PresetSpiderMonkey:      {Language: "javascript", Engine: EngineSpiderMonkey},
	PresetQuickJS:           {Language: "javascript", Engine: EngineQuickJS},
	PresetErlang:            {Language: "erlang"},
	PresetCouchpy:           {Language: languagePython, Image: CouchDBPythonImage, Command: "/usr/local/bin/couchpy --json-module=json"},
	PresetCouchpySimplejson: {Language: languagePython, Image: CouchDBPythonImage, Command: "/usr/local/bin/couchpy --json-module=simplejson"},
	PresetPyPy:              {Language: languagePython, Image: CouchDBPyPyImage},
}

// Resolved is the query server with its preset applied: the preset fills the fields left
// empty; fields set next to it win.
func (q QueryServer) Resolved() QueryServer {
	p, ok := presets[q.Preset]
	if !ok {
		return q
	}
	if q.Language == "" {
		q.Language = p.Language
	}
	if q.Engine == "" {
		q.Engine = p.Engine
	}
	if q.Image == "" {
		q.Image = p.Image
	}
	if q.Command == "" {
		q.Command = p.Command
	}
	return q
}

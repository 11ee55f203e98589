package v1alpha1

import "strings"

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

// Python implementations, as Python names itself (platform.python_implementation(), which
// the runner's probe reports).
const (
	PythonCPython = "CPython"
	PythonPyPy    = "PyPy"
)

// presetEngines are what runs the views of the presets whose names say more than their
// fields: the Python implementation. The JavaScript presets set engine.
var presetEngines = map[Preset]string{
	PresetCouchpy: PythonCPython, PresetCouchpySimplejson: PythonCPython, PresetPyPy: PythonPyPy,
}

// AskedRuntime is what the query server asks to run its views, in the terms of the runner's
// probe: engine is the JavaScript engine (spidermonkey, quickjs) or the Python implementation
// of a Python preset (CPython, PyPy), jsonModule the JSON module its command names
// (couchpy's --json-module). Either is empty where the query server leaves it to CouchDB
// (language javascript without engine, python without a preset or --json-module). A language
// set next to a Python preset is no longer the preset's, and neither is its implementation.
func (q QueryServer) AskedRuntime() (engine, jsonModule string) {
	r := q.Resolved()
	engine = string(r.Engine)
	if p, ok := presets[q.Preset]; ok && engine == "" && r.Language == p.Language {
		engine = presetEngines[q.Preset]
	}
	fields := strings.Fields(r.Command)
	for i, f := range fields {
		if module, ok := strings.CutPrefix(f, "--json-module="); ok {
			jsonModule = module
		} else if f == "--json-module" && i+1 < len(fields) {
			jsonModule = fields[i+1]
		}
	}
	return engine, jsonModule
}

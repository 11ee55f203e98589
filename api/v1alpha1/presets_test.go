package v1alpha1

import "testing"

func TestPresetsFillWhatIsNotSet(t *testing.T) {
	cases := []struct {
		in   QueryServer
		want QueryServer
	}{
		{QueryServer{Name: "a", Preset: PresetQuickJS}, QueryServer{Name: "a", Preset: PresetQuickJS, Language: "javascript", Engine: EngineQuickJS}},
		// couchpy alone would pick simplejson, which the image has: the preset names json.
		{QueryServer{Name: "p", Preset: PresetCouchpy},
			QueryServer{Name: "p", Preset: PresetCouchpy, Language: "python", Image: CouchDBPythonImage, Command: "/usr/local/bin/couchpy --json-module=json"}},
		{QueryServer{Name: "b", Preset: PresetCouchpySimplejson},
			QueryServer{Name: "b", Preset: PresetCouchpySimplejson, Language: "python", Image: CouchDBPythonImage, Command: "/usr/local/bin/couchpy --json-module=simplejson"}},
		{QueryServer{Name: "c", Preset: PresetPyPy, Image: "my/pypy:1"}, QueryServer{Name: "c", Preset: PresetPyPy, Language: "python", Image: "my/pypy:1"}},
		{QueryServer{Name: "d", Language: "python"}, QueryServer{Name: "d", Language: "python"}},
	}
	for _, c := range cases {
		got := c.in.Resolved()
		if got.Language != c.want.Language || got.Engine != c.want.Engine || got.Image != c.want.Image || got.Command != c.want.Command {
			t.Errorf("%+v resolved to %+v, want %+v", c.in, got, c.want)
		}
	}
}

// What a query server asks to run its views is what the runner holds its probe's answer to:
// the presets' engines and implementations, and the JSON module a command names.
func TestAskedRuntime(t *testing.T) {
	cases := []struct {
		in                 QueryServer
		engine, jsonModule string
	}{
		{QueryServer{Preset: PresetSpiderMonkey}, "spidermonkey", ""},
		{QueryServer{Preset: PresetQuickJS}, "quickjs", ""},
		{QueryServer{Language: "javascript", Engine: EngineQuickJS}, "quickjs", ""},
		{QueryServer{Preset: PresetCouchpy}, "CPython", "json"},
		{QueryServer{Preset: PresetCouchpySimplejson}, "CPython", "simplejson"},
		{QueryServer{Preset: PresetPyPy}, "PyPy", ""},
		// A command next to a preset overrides the preset's, and its JSON module with it.
		{QueryServer{Preset: PresetCouchpy, Command: "/opt/couchpy --json-module simplejson"}, "CPython", "simplejson"},
		{QueryServer{Preset: PresetPyPy, Command: "pypy3 -m couchdb.view --json-module=json"}, "PyPy", "json"},
		// A language next to a Python preset makes it another query server.
		{QueryServer{Preset: PresetPyPy, Language: "python_pypy"}, "", ""},
		// Nothing named: CouchDB's choice.
		{QueryServer{Language: "javascript"}, "", ""},
		{QueryServer{Language: "python"}, "", ""},
		{QueryServer{Preset: PresetErlang}, "", ""},
	}
	for _, c := range cases {
		if engine, module := c.in.AskedRuntime(); engine != c.engine || module != c.jsonModule {
			t.Errorf("%+v asks for %q, %q; want %q, %q", c.in, engine, module, c.engine, c.jsonModule)
		}
	}
}

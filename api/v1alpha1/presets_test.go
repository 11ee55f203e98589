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

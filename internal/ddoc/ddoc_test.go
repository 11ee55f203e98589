package ddoc

// The design documents as data, no server. That CouchDB runs them in every language is
// internal/runner's TestEveryLanguageOnRealCouchDB.

import (
	"strings"
	"testing"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
)

func TestIndexingDesignDocs(t *testing.T) {
	for _, c := range []struct {
		language   string
		mapMarker  string // a line of the seed's map in that language
		customSum  string
		commentTag string
	}{
		{"javascript", `emit([year, month], doc.score);`, "return sum(values);", "// couchbench n1"},
		{"javascript_quickjs", `emit([year, month], doc.score);`, "return sum(values);", "// couchbench n1"},
		{"python", `yield [year, month], doc['score']`, "return sum(values)", "# couchbench n1"},
		// An external Python query server registered under its own name (couchpy with
		// simplejson in the CouchDB kit) runs the same Python source.
		{"python_simplejson", `yield [year, month], doc['score']`, "return sum(values)", "# couchbench n1"},
		{"erlang", `Emit([list_to_binary(Year), list_to_binary(Month)], proplists:get_value(<<"score">>, Doc))`, "lists:sum(Values)", "% couchbench n1"},
	} {
		builtin, err := Indexing("_design/x", c.language, benchv1.ReducerBuiltin, "n1")
		if err != nil {
			t.Fatal(err)
		}
		v := builtin.Views[ByMonth]
		if builtin.Language != c.language || v.Reduce != "_sum" || !strings.Contains(v.Map, c.mapMarker) || !strings.Contains(v.Map, c.commentTag) {
			t.Errorf("%s builtin: %+v", c.language, builtin)
		}
		// autoupdate false, top level: the background indexer must not start the build.
		if builtin.AutoUpdate == nil || *builtin.AutoUpdate {
			t.Errorf("%s: autoupdate %v, want false", c.language, builtin.AutoUpdate)
		}
		custom, err := Indexing("_design/x", c.language, benchv1.ReducerCustom, "n1")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(custom.Views[ByMonth].Reduce, c.customSum) {
			t.Errorf("%s custom reduce %q", c.language, custom.Views[ByMonth].Reduce)
		}
		// Another nonce changes the code, so CouchDB's index signature and the build are new.
		other, _ := Indexing("_design/x", c.language, benchv1.ReducerBuiltin, "n2")
		if other.Views[ByMonth].Map == v.Map {
			t.Errorf("%s: the nonce does not change the map function", c.language)
		}
	}
	if _, err := Indexing("_design/x", "cobol", benchv1.ReducerBuiltin, "n"); err == nil || !strings.Contains(err.Error(), "cobol") {
		t.Errorf("an unknown language: %v", err)
	}
}

func TestLanguageOfAnArm(t *testing.T) {
	cases := map[string]benchv1.QueryServer{
		"javascript":         {Language: "javascript"},
		"javascript_quickjs": {Language: "javascript", Engine: benchv1.EngineQuickJS},
		"python":             {Language: "python"},
		"python_simplejson":  {Language: "python_simplejson"},
	}
	for want, qs := range cases {
		if got := Language(qs); got != want {
			t.Errorf("Language(%+v) = %q, want %q", qs, got, want)
		}
	}
	if qs := (benchv1.QueryServer{Language: "javascript", Engine: benchv1.EngineSpiderMonkey}); Language(qs) != "javascript" {
		t.Errorf("spidermonkey arm: %q", Language(qs))
	}
}

func TestViewReadsDesignDoc(t *testing.T) {
	for _, language := range []string{"python", "python_simplejson"} {
		d, err := ViewReads("_design/r", language)
		if err != nil {
			t.Fatal(err)
		}
		if d.Language != language || !strings.Contains(d.Views[EmitDoc].Map, "yield doc['_id'], doc") || !strings.Contains(d.Views[EmitNull].Map, "None") {
			t.Errorf("%s view reads: %+v", language, d)
		}
	}
}

// Package ddoc builds the benchmark's design documents in each view language: the seed
// article's "scores by month" view for indexing, and seed 002's emit-doc / emit-null views
// for full view reads.
//
// CouchDB shares one index between design documents whose views are identical (the index
// is named by a signature of the views' code), so a "new design document" alone would not
// rebuild anything. Each indexing design document therefore carries a nonce in a comment of
// its map function: same work, new signature, built from scratch.
package ddoc

import (
	"fmt"
	"strings"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/couch"
)

// View names. emit_doc and emit_null are keyed by document id, for k6's lookups of a key
// or a range; user_doc and user_null emit the same keyed by the username, whose order has
// nothing to do with the ids', for seed 002's full reads: with include_docs, each row then
// costs a lookup of its document somewhere else in the database file, as in the seed, where
// the view order was not the order documents were written in. Keyed by id, the documents
// would be read in file order, and include_docs would look cheaper than it is.
const (
	ByMonth  = "by_month"
	EmitDoc  = "emit_doc"
	EmitNull = "emit_null"
	UserDoc  = "user_doc"
	UserNull = "user_null"
)

// Language is the design document language for an arm. A JavaScript arm on QuickJS uses
// CouchDB 3.4's javascript_quickjs language, which runs on QuickJS whatever the server's
// js_engine is; any other arm uses its language as it is.
func Language(qs benchv1.QueryServer) string {
	if qs.Language == "javascript" && qs.Engine == benchv1.EngineQuickJS {
		return "javascript_quickjs"
	}
	return qs.Language
}

// family is the source dialect of a language.
type family int

const (
	javascript family = iota
	python
	erlang
)

// familyOf: any language named python* is a Python query server registered under its own
// name, such as python_simplejson for couchpy --json-module=simplejson (an external
// language is registered with CouchDB as COUCHDB_QUERY_SERVER_<NAME>): all of them run the
// same Python view source.
func familyOf(language string) (family, error) {
	switch {
	case language == "javascript", language == "javascript_quickjs":
		return javascript, nil
	case strings.HasPrefix(language, "python"):
		return python, nil
	case language == "erlang":
		return erlang, nil
	}
	return 0, fmt.Errorf("no view functions for language %q: couchbench has them for javascript (and javascript_quickjs), "+
		"python (and any python* query server) and erlang", language)
}

// Indexing is the design document of one indexing build: the seed's map function and the
// reducer to compare, with autoupdate off so that the build starts when the runner asks.
func Indexing(id, language string, reducer benchv1.Reducer, nonce string) (couch.DesignDoc, error) {
	fam, err := familyOf(language)
	if err != nil {
		return couch.DesignDoc{}, err
	}
	view := couch.View{Map: byMonthMap(fam, nonce), Reduce: "_sum"}
	if reducer == benchv1.ReducerCustom {
		view.Reduce = sumReduce[fam]
	}
	off := false
	return couch.DesignDoc{ID: id, Language: language, Views: map[string]couch.View{ByMonth: view}, AutoUpdate: &off}, nil
}

// ViewReads is the design document of seed 002 and the k6 view scenarios: views that emit
// the whole document or null (read with and without include_docs), by id and by username.
func ViewReads(id, language string) (couch.DesignDoc, error) {
	fam, err := familyOf(language)
	if err != nil {
		return couch.DesignDoc{}, err
	}
	off := false
	return couch.DesignDoc{ID: id, Language: language, AutoUpdate: &off, Views: map[string]couch.View{
		EmitDoc:  {Map: emitDocMap[fam]},
		EmitNull: {Map: emitNullMap[fam]},
		UserDoc:  {Map: userDocMap[fam]},
		UserNull: {Map: userNullMap[fam]},
	}}, nil
}

// byMonthMap is the seed article's map in each language: key [year, month] as strings,
// value the score. The nonce comment gives each build its own index signature.
func byMonthMap(fam family, nonce string) string {
	switch fam {
	case python:
		return fmt.Sprintf(`# couchbench %s
def map(doc):
    if 'metadata' in doc and 'createdAt' in doc['metadata']:
        created_at = doc['metadata']['createdAt']
        year, month, _ = created_at.split('-')
        yield [year, month], doc['score']
`, nonce)
	case erlang:
		return fmt.Sprintf(`%% couchbench %s
fun({Doc}) ->
    case proplists:get_value(<<"metadata">>, Doc) of
        {Metadata} ->
            CreatedAt = proplists:get_value(<<"createdAt">>, Metadata),
            case string:tokens(binary_to_list(CreatedAt), "-") of
                [Year, Month|_] -> Emit([list_to_binary(Year), list_to_binary(Month)], proplists:get_value(<<"score">>, Doc));
                _ -> ok
            end;
        _ -> ok
    end
end.`, nonce)
	default:
		return fmt.Sprintf(`function(doc) {
  // couchbench %s
  if (doc.metadata && doc.metadata.createdAt) {
    var parts = doc.metadata.createdAt.split("-"),
        year = parts[0],
        month = parts[1];
    emit([year, month], doc.score);
  }
}`, nonce)
	}
}

// sumReduce is a sum written in the view's language: the seed's "custom reducer", run by
// the query server instead of CouchDB's builtin _sum.
var sumReduce = map[family]string{
	javascript: `function(keys, values, rereduce) {
  return sum(values);
}`,
	python: `def reduce(keys, values, rereduce):
    return sum(values)
`,
	erlang: `fun(Keys, Values, ReReduce) -> lists:sum(Values) end.`,
}

var emitDocMap = map[family]string{
	javascript: `function(doc) {
  emit(doc._id, doc);
}`,
	python: `def map(doc):
    yield doc['_id'], doc
`,
	erlang: `fun({Doc}) -> Emit(proplists:get_value(<<"_id">>, Doc), {Doc}) end.`,
}

var emitNullMap = map[family]string{
	javascript: `function(doc) {
  emit(doc._id, null);
}`,
	python: `def map(doc):
    yield doc['_id'], None
`,
	erlang: `fun({Doc}) -> Emit(proplists:get_value(<<"_id">>, Doc), null) end.`,
}

var userDocMap = map[family]string{
	javascript: `function(doc) {
  emit(doc.username === undefined ? null : doc.username, doc);
}`,
	python: `def map(doc):
    yield doc.get('username'), doc
`,
	erlang: `fun({Doc}) -> Emit(proplists:get_value(<<"username">>, Doc, null), {Doc}) end.`,
}

var userNullMap = map[family]string{
	javascript: `function(doc) {
  emit(doc.username === undefined ? null : doc.username, null);
}`,
	python: `def map(doc):
    yield doc.get('username'), None
`,
	erlang: `fun({Doc}) -> Emit(proplists:get_value(<<"username">>, Doc, null), null) end.`,
}

// Probe is the view whose one row, over a database of one document, says what runs the
// language's views: its map function reports its own interpreter. The key is the engine
// (spidermonkey or quickjs; CPython or PyPy; erlang), the value its version (Python's, the
// Erlang/OTP release; "" for JavaScript, whose engine version /_node/_local/_versions gives)
// and for Python the JSON module couchpy decodes with.
const Probe = "runtime"

// ProbeDoc is the design document of Probe in a language.
func ProbeDoc(id, language string) (couch.DesignDoc, error) {
	fam, err := familyOf(language)
	if err != nil {
		return couch.DesignDoc{}, err
	}
	return couch.DesignDoc{ID: id, Language: language, Views: map[string]couch.View{Probe: {Map: probeMap[fam]}}}, nil
}

// probeMap: SpiderMonkey keeps the non-standard uneval, QuickJS has none; couchpy's json
// module remembers the encoder it chose (simplejson whenever installed, unless told).
var probeMap = map[family]string{
	javascript: `function(doc) {
  emit(typeof uneval === "function" ? "spidermonkey" : "quickjs", {version: ""});
}`,
	python: `def map(doc):
    import platform
    import couchdb.json
    encoder = couchdb.json._encode
    module = encoder.__defaults__[0].__module__ if encoder and encoder.__defaults__ else ""
    yield platform.python_implementation(), {"version": platform.python_version(), "json": module.split(".")[0]}
`,
	erlang: `fun({_Doc}) -> Emit(<<"erlang">>, {[{<<"version">>, list_to_binary(erlang:system_info(otp_release))}]}) end.`,
}

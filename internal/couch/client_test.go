package couch

// The client's own checks and the errors it classifies, made up here: no server is
// involved. The client on real CouchDB is faults_test.go and recreate_test.go.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestCredentialsNeverPrintThePassword(t *testing.T) {
	c := Credentials{Username: "admin", Password: "s3cret"}
	for _, s := range []string{c.String(), fmt.Sprintf("%v %+v %#v %s", c, c, c, c)} {
		if strings.Contains(s, "s3cret") {
			t.Errorf("%q shows the password", s)
		}
	}
}

func TestURLWithCredentialsIsRefused(t *testing.T) {
	_, err := New("http://admin:s3cret@couchdb:5984", Credentials{}, Options{})
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("New with credentials in the URL: %v", err)
	}
	if _, err := New("ftp://couchdb", Credentials{}, Options{}); err == nil {
		t.Error("an ftp URL was accepted")
	}
}

// A 5xx may pass when sent again, except the answers that say the request itself cannot
// work; the caller's own cancel is never transient.
func TestTransient(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&Error{Status: 500, Name: "internal_server_error", Reason: "No DB shards could be opened."}, true},
		{&Error{Status: 503}, true},
		{&Error{Err: errors.New("connection refused")}, true},
		{&Error{Status: 500, Name: "unknown_query_language", Reason: "python_nosuch"}, false},
		{&Error{Status: 404, Name: "not_found"}, false},
		{&Error{Err: context.Canceled}, false},
		{errors.New("not a CouchDB answer"), false},
	} {
		if got := Transient(tc.err); got != tc.want {
			t.Errorf("Transient(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// What CouchDB answers for a request it forwards to a node that is down or going away, and
// the answers that look alike but are not (TestNodeDownAnswersOnRealCouchDB has them come
// through the client).
func TestNodeDown(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&Error{Status: 412, Name: "nodedown", Reason: "couchdb@node3 is down"}, true},
		{&Error{Status: 500, Name: "badrpc", Reason: "{'EXIT',{noproc,{gen_server,call,[config,{get,\"smoosh.ratio_views\",\"max_size\"}]}}}"}, true},
		// Apache CouchDB 3.4.3's answer (kit's cluster) to a config PUT forwarded to a node
		// shutting down.
		{&Error{Status: 500, Name: "case_clause", Reason: "{badrpc,\n    {'EXIT',\n        {noproc,\n            {gen_server,call,\n                [config,\n                 {set,\"smoosh.slack_views\",\"max_size\",\"1\","}, true},
		{&Error{Status: 500, Name: "unknown_error", Reason: "noproc"}, true},
		{&Error{Status: 500, Name: "rexi_DOWN", Reason: "{'couchdb@node3',noconnection}"}, true},
		{&Error{Status: 502}, true},
		{&Error{Err: errors.New("connection refused")}, true},
		// Ordinary 500s: asking again answers the same.
		{&Error{Status: 500, Name: "internal_server_error", Reason: "No DB shards could be opened."}, false},
		{&Error{Status: 500, Name: "unknown_error", Reason: "injected by couchfault"}, false},
		{&Error{Status: 500, Name: "map_compilation_error", Reason: "badrpcs is not defined"}, false},
		{&Error{Status: 500}, false},
		// The atoms only count in a 500.
		{&Error{Status: 400, Name: "bad_request", Reason: "badrpc"}, false},
		{&Error{Err: context.DeadlineExceeded}, false},
		{errors.New("badrpc noproc"), false},
	} {
		if got := NodeDown(tc.err); got != tc.want {
			t.Errorf("NodeDown(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

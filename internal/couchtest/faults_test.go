package couchtest_test

// Tests of internal/couchtest itself, the in-repo fake (not CouchDB): its injected faults.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/couchbench/couchbench/internal/couchtest"
)

const twoDocs = `{"docs":[{"_id":"a"},{"_id":"b"}]}`

func TestFaultStatus(t *testing.T) {
	s := couchtest.New(t)
	do(t, s, http.MethodPut, "/db", nil)
	s.Fail(couchtest.Fault{Method: http.MethodPost, PathPrefix: "/db/_bulk_docs", Times: 2, Status: http.StatusServiceUnavailable})

	if got := do(t, s, http.MethodGet, "/db", nil); got.status != http.StatusOK {
		t.Errorf("a request the fault does not match: %d", got.status)
	}
	for i := range 2 {
		got := do(t, s, http.MethodPost, "/db/_bulk_docs", []byte(twoDocs))
		if got.status != http.StatusServiceUnavailable || got.json(t)["error"] != "unknown_error" || got.header.Get("Server") == "" {
			t.Errorf("try %d: %d %s", i, got.status, got.body)
		}
	}
	if n := s.DocCount("db"); n != 0 {
		t.Errorf("a failed request wrote %d docs", n)
	}
	if got := do(t, s, http.MethodPost, "/db/_bulk_docs", []byte(twoDocs)); got.status != http.StatusCreated {
		t.Errorf("after the fault is used up: %d", got.status)
	}
	if n := s.Requests(http.MethodPost, "/db/_bulk_docs"); n != 3 {
		t.Errorf("Requests = %d, want 3", n)
	}
	if n := s.Requests("", "/db"); n != 5 {
		t.Errorf("Requests(any method) = %d, want 5", n)
	}
}

// post sends a _bulk_docs request and returns the transport error, if any.
func post(s *couchtest.Server, body string) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodPost, s.URL+"/db/_bulk_docs", bytes.NewReader([]byte(body)))
	if err != nil {
		return nil, err
	}
	req.SetBasicAuth("admin", "secret")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		_ = resp.Body.Close()
	}
	return resp, err
}

func TestFaultDrop(t *testing.T) {
	s := couchtest.New(t)
	do(t, s, http.MethodPut, "/db", nil)

	s.Fail(couchtest.Fault{Method: http.MethodPost, PathPrefix: "/db/_bulk_docs", Drop: true})
	if _, err := post(s, twoDocs); err == nil {
		t.Fatal("a dropped request got an answer")
	}
	if n := s.DocCount("db"); n != 0 {
		t.Errorf("a request dropped before running wrote %d docs", n)
	}

	s.Fail(couchtest.Fault{Method: http.MethodPost, PathPrefix: "/db/_bulk_docs", Drop: true, AfterWrite: true})
	if _, err := post(s, twoDocs); err == nil {
		t.Fatal("a dropped request got an answer")
	}
	if n := s.DocCount("db"); n != 2 {
		t.Errorf("a request dropped after writing left %d docs, want 2", n)
	}
	// The client's retry meets its own writes.
	got := do(t, s, http.MethodPost, "/db/_bulk_docs", []byte(twoDocs))
	var results []map[string]any
	if err := json.Unmarshal(got.body, &results); err != nil || got.status != http.StatusCreated {
		t.Fatalf("%d %s", got.status, got.body)
	}
	for _, r := range results {
		if r["error"] != "conflict" {
			t.Errorf("retry: %v", r)
		}
	}
}

func TestFaultDelay(t *testing.T) {
	s := couchtest.New(t)
	do(t, s, http.MethodPut, "/db", nil)
	const delay = 200 * time.Millisecond

	s.Fail(couchtest.Fault{PathPrefix: "/db/_bulk_docs", Delay: delay})
	start := time.Now()
	if resp, err := post(s, twoDocs); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("%v %v", resp, err)
	}
	// Held for the delay, then answered: never earlier (later depends on the machine's load).
	if elapsed := time.Since(start); elapsed < delay {
		t.Errorf("answered after %v, before the %v delay", elapsed, delay)
	}

	// A client that gives up during the delay: the request is not run (if it were, doc c
	// would be there once the delay is over).
	s.Fail(couchtest.Fault{PathPrefix: "/db/_bulk_docs", Delay: 300 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/db/_bulk_docs", bytes.NewReader([]byte(`{"docs":[{"_id":"c"}]}`)))
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth("admin", "secret")
	req.Header.Set("Content-Type", "application/json")
	if _, err := http.DefaultClient.Do(req); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v", err)
	}
	time.Sleep(500 * time.Millisecond)
	if got := do(t, s, http.MethodGet, "/db/c", nil); got.status != http.StatusNotFound {
		t.Errorf("an abandoned delayed request wrote doc c: %d", got.status)
	}
}

package couchtest_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/couchbench/couchbench/internal/couchtest"
)

// fixture is a recorded response (shared/couchdb/README.md, "Fixture format").
type fixture struct {
	Request struct {
		Method string          `json:"method"`
		Path   string          `json:"path"`
		Body   json.RawMessage `json:"body"`
	} `json:"request"`
	Status  int               `json:"status"`
	Headers map[string]string `json:"response_headers"`
	Body    json.RawMessage   `json:"body"`
	BodyRaw *string           `json:"body_raw"`
}

func loadFixture(t testing.TB, name string) fixture {
	t.Helper()
	data, err := os.ReadFile("testdata/" + name + ".json")
	if err != nil {
		t.Fatal(err)
	}
	var f fixture
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return f
}

// raw is the exact response text: body_raw where it was kept, else compact JSON + "\n".
func (f fixture) raw() string {
	if f.BodyRaw != nil {
		return *f.BodyRaw
	}
	var b bytes.Buffer
	if err := json.Compact(&b, f.Body); err != nil {
		panic(err)
	}
	return b.String() + "\n"
}

var truncated = regexp.MustCompile(`"x+\.\.\. \((\d+) 'x' characters in the real request, truncated here\)"`)

// requestBody is the body that was sent: a body recorded as a JSON string whose text is not
// JSON was sent as that text; padding the recorder truncated is restored.
func (f fixture) requestBody() []byte {
	if len(f.Request.Body) == 0 || string(f.Request.Body) == "null" {
		return nil
	}
	var text string
	if json.Unmarshal(f.Request.Body, &text) == nil && !json.Valid([]byte(text)) {
		return []byte(text)
	}
	return truncated.ReplaceAllFunc(f.Request.Body, func(m []byte) []byte {
		n, _ := strconv.Atoi(string(truncated.FindSubmatch(m)[1]))
		return []byte(`"` + strings.Repeat("x", n) + `"`)
	})
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t testing.TB) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("body %q: %v", r.body, err)
	}
	return v
}

// do sends a request as the default admin.
func do(t testing.TB, s *couchtest.Server, method, path string, body []byte) response {
	t.Helper()
	return doAs(t, s, "admin", "secret", method, path, body)
}

// doAs sends a request with Basic auth, or none for an empty user.
func doAs(t testing.TB, s *couchtest.Server, user, password, method, path string, body []byte) response {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, s.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if user != "" {
		req.SetBasicAuth(user, password)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{resp.StatusCode, resp.Header, data}
}

var requestID = regexp.MustCompile(`^[0-9a-f]{10}$`)

// checkHeaders compares the headers every recorded answer has, and that the server sends an
// ETag or a Location exactly where the recording has one.
func checkHeaders(t testing.TB, name string, got response, want fixture) {
	t.Helper()
	for _, h := range []string{"Content-Type", "Cache-Control", "Server"} {
		if got.header.Get(h) != want.Headers[h] {
			t.Errorf("%s: %s = %q, recorded %q", name, h, got.header.Get(h), want.Headers[h])
		}
	}
	_, recorded := want.Headers["X-Couch-Request-ID"]
	if id := got.header.Get("X-Couch-Request-ID"); recorded != (id != "") || (recorded && !requestID.MatchString(id)) {
		t.Errorf("%s: X-Couch-Request-ID = %q, recorded %q", name, id, want.Headers["X-Couch-Request-ID"])
	}
	for _, h := range []string{"ETag", "Location"} {
		if _, recorded := want.Headers[h]; recorded != (got.header.Get(h) != "") {
			t.Errorf("%s: %s = %q, recorded %q", name, h, got.header.Get(h), want.Headers[h])
		}
	}
}

// checkExact compares status, headers and the exact body text with a recording.
func checkExact(t testing.TB, name string, got response, want fixture) {
	t.Helper()
	if got.status != want.Status {
		t.Errorf("%s: status %d, recorded %d (body %s)", name, got.status, want.Status, got.body)
	}
	checkHeaders(t, name, got, want)
	if string(got.body) != want.raw() {
		t.Errorf("%s: body\n%q\nrecorded\n%q", name, got.body, want.raw())
	}
}

// checkShape compares status and parsed bodies with the masked members' values left out
// (the members must exist on both sides).
func checkShape(t testing.TB, name string, got response, want fixture, masked ...string) {
	t.Helper()
	if got.status != want.Status {
		t.Errorf("%s: status %d, recorded %d (body %s)", name, got.status, want.Status, got.body)
	}
	checkHeaders(t, name, got, want)
	if !bytes.HasSuffix(got.body, []byte("\n")) || bytes.HasSuffix(got.body, []byte("\n\n")) {
		t.Errorf("%s: body does not end with one \"\\n\": %q", name, got.body)
	}
	var g, w any
	if err := json.Unmarshal(got.body, &g); err != nil {
		t.Fatalf("%s: %v in %q", name, err, got.body)
	}
	if err := json.Unmarshal(want.Body, &w); err != nil {
		t.Fatal(err)
	}
	g, w = mask(g, masked), mask(w, masked)
	if !reflect.DeepEqual(g, w) {
		gj, _ := json.Marshal(g)
		wj, _ := json.Marshal(w)
		t.Errorf("%s: body\n%s\nrecorded\n%s", name, gj, wj)
	}
}

func mask(v any, keys []string) any {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if slices.Contains(keys, k) {
				x[k] = "<masked>"
				continue
			}
			x[k] = mask(val, keys)
		}
	case []any:
		for i := range x {
			x[i] = mask(x[i], keys)
		}
	}
	return v
}

var revShape = regexp.MustCompile(`^\d+-[0-9a-f]{32}$`)

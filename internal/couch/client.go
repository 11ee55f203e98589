// Package couch is the project's one CouchDB client: a small typed client over net/http.
//
// Why not a general driver such as go-kivik: the runner measures CouchDB, so it needs what a
// driver is built to hide. It needs the exact status of each answer (201 against 202 for
// batch=ok, a view request's 500 timeout while the build goes on), per-document _bulk_docs
// results, the row count of a streamed view without decoding every document into memory,
// raw /_active_tasks and per-node statistics and configuration, and one connection pool
// sized to the load it generates. That is about twenty endpoints; a driver would add a
// dependency tree and still leave half of them to raw requests.
//
// A request is sent once: callers decide whether to ask again, because only they know whether
// a request is safe to repeat (seeding with fixed ids is; a timed write is not). The few
// calls that ask again themselves (Outlast, WaitForView, RecreateDB, DeleteDB) do it on the
// client's Waits.
package couch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Credentials are a CouchDB user's name and password. They print redacted.
type Credentials struct {
	Username string
	Password string
}

// String keeps passwords out of logs and error messages.
func (c Credentials) String() string {
	if c.Username == "" {
		return "(no credentials)"
	}
	return c.Username + ":<redacted>"
}

// GoString keeps passwords out of %#v.
func (c Credentials) GoString() string { return c.String() }

// Options tune the client's connection pool.
type Options struct {
	// MaxConns is the most connections kept open to the server: the load's concurrency.
	MaxConns int
	// RequestTimeout bounds one request; 0 leaves it to the caller's context. View builds
	// use contexts, since a blocking view request may legitimately take minutes.
	RequestTimeout time.Duration
	// Waits are how long and how often the client and its callers wait for CouchDB; zero
	// fields take DefaultWaits'.
	Waits Waits
}

// The client's defaults (`couchbench version` lists them).
const (
	// MinConns is the smallest connection pool, whatever Options.MaxConns says.
	MinConns = 4
	// DialTimeout bounds opening a connection; KeepAlive is the TCP keep-alive period of
	// open ones; IdleConnTimeout closes a connection unused that long.
	DialTimeout     = 10 * time.Second
	KeepAlive       = 30 * time.Second
	IdleConnTimeout = 90 * time.Second
)

// Client talks to one CouchDB cluster through one base URL.
type Client struct {
	base     *url.URL
	creds    Credentials
	http     *http.Client
	maxConns int
	waits    Waits
}

// New makes a client. The URL must not carry credentials: they would show wherever the URL
// does (process lists, logs, status).
func New(baseURL string, creds Credentials, opts Options) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil {
		return nil, fmt.Errorf("couchdb URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("couchdb URL %q: scheme must be http or https", u.Redacted())
	}
	if u.User != nil {
		return nil, fmt.Errorf("couchdb URL %q carries credentials; pass them through the environment or a credentials file instead", u.Redacted())
	}
	maxConns := max(opts.MaxConns, MinConns)
	transport := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         (&net.Dialer{Timeout: DialTimeout, KeepAlive: KeepAlive}).DialContext,
		MaxIdleConns:        maxConns,
		MaxIdleConnsPerHost: maxConns,
		MaxConnsPerHost:     maxConns,
		IdleConnTimeout:     IdleConnTimeout,
		// Views and bulk answers are large; compression would cost the client CPU that
		// belongs to the load it generates.
		DisableCompression: true,
	}
	return &Client{base: u, creds: creds, http: &http.Client{Transport: transport, Timeout: opts.RequestTimeout}, maxConns: maxConns,
		waits: opts.Waits.orDefaults()}, nil
}

// MaxConns is the most requests the client has on their way at once; more wait for a
// connection.
func (c *Client) MaxConns() int { return c.maxConns }

// URL is the server's base URL (without credentials).
func (c *Client) URL() string { return c.base.String() }

// Error is a CouchDB error answer, or a transport failure when Status is 0.
type Error struct {
	Method string
	Path   string
	Status int
	// Name and Reason are CouchDB's "error" and "reason" fields.
	Name   string
	Reason string
	// Err is the transport error when no answer came.
	Err error
}

func (e *Error) Error() string {
	if e.Status == 0 {
		return fmt.Sprintf("%s %s: no answer: %v", e.Method, e.Path, e.Err)
	}
	if e.Name == "" {
		return fmt.Sprintf("%s %s: HTTP %d", e.Method, e.Path, e.Status)
	}
	return fmt.Sprintf("%s %s: HTTP %d %s: %s", e.Method, e.Path, e.Status, e.Name, e.Reason)
}

func (e *Error) Unwrap() error { return e.Err }

// StatusOf is the HTTP status of a CouchDB error answer, 0 for anything else.
func StatusOf(err error) int {
	var ce *Error
	if errors.As(err, &ce) {
		return ce.Status
	}
	return 0
}

// Transient reports whether a failure may go away when the same request is sent again:
// no answer at all (a dropped or refused connection, but not the caller's own cancel or
// deadline), or a 5xx other than those that say the request itself cannot work (a view
// language the server does not have). Whether sending again is safe is the caller's call.
func Transient(err error) bool {
	var ce *Error
	if !errors.As(err, &ce) {
		return false
	}
	if ce.Status == 0 {
		return !errors.Is(ce.Err, context.Canceled) && !errors.Is(ce.Err, context.DeadlineExceeded)
	}
	return ce.Status >= 500 && ce.Name != "unknown_query_language"
}

// request is one HTTP exchange; path is already escaped.
type request struct {
	method string
	path   string
	query  url.Values
	body   []byte
	// bodyParts is a body sent as its slices one after the other, never joined.
	bodyParts net.Buffers
	// accept lists the statuses that are answers rather than errors.
	accept []int
	// header holds headers of the request's own, beside those every request has.
	header http.Header
}

// send does the request and returns the open response for the caller to read and close,
// or an *Error. A response with a status outside req.accept is read and closed here.
func (c *Client) send(ctx context.Context, req request) (*http.Response, error) {
	u := *c.base
	u.RawPath = c.base.EscapedPath() + req.path
	u.Path, _ = url.PathUnescape(u.RawPath)
	u.RawQuery = req.query.Encode()
	var body io.Reader
	if req.body != nil {
		body = bytes.NewReader(req.body)
	}
	hreq, err := http.NewRequestWithContext(ctx, req.method, u.String(), body)
	if err != nil {
		return nil, &Error{Method: req.method, Path: req.path, Err: err}
	}
	if req.bodyParts != nil {
		setBodyParts(hreq, req.bodyParts)
	}
	for k, v := range req.header {
		hreq.Header[k] = v
	}
	hreq.Header.Set("Accept", "application/json")
	if req.body != nil || req.bodyParts != nil {
		hreq.Header.Set("Content-Type", "application/json")
	}
	if c.creds.Username != "" {
		hreq.SetBasicAuth(c.creds.Username, c.creds.Password)
	}
	resp, err := c.http.Do(hreq)
	if err != nil {
		return nil, &Error{Method: req.method, Path: req.path, Err: err}
	}
	for _, s := range req.accept {
		if resp.StatusCode == s {
			return resp, nil
		}
	}
	defer drain(resp)
	cerr := &Error{Method: req.method, Path: req.path, Status: resp.StatusCode}
	var answer struct {
		Error  string `json:"error"`
		Reason string `json:"reason"`
	}
	if data, rerr := io.ReadAll(io.LimitReader(resp.Body, 64<<10)); rerr == nil && json.Unmarshal(data, &answer) == nil {
		cerr.Name, cerr.Reason = answer.Error, answer.Reason
	}
	return nil, cerr
}

// setBodyParts makes parts the request's body, with its length, and GetBody for a transport
// that sends it again on a new connection: reading a net.Buffers consumes it, so every read
// is of a copy of the slice headers.
func setBodyParts(hreq *http.Request, parts net.Buffers) {
	for _, p := range parts {
		hreq.ContentLength += int64(len(p))
	}
	hreq.GetBody = func() (io.ReadCloser, error) {
		fresh := slices.Clone(parts)
		return io.NopCloser(&fresh), nil
	}
	hreq.Body, _ = hreq.GetBody()
}

// call does a request and decodes a JSON answer into out (when out is not nil). It
// returns the status, so that callers can tell 201 from 202.
func (c *Client) call(ctx context.Context, req request, out any) (int, error) {
	resp, err := c.send(ctx, req)
	if err != nil {
		return StatusOf(err), err
	}
	defer drain(resp)
	if out == nil {
		return resp.StatusCode, nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return resp.StatusCode, &Error{Method: req.method, Path: req.path, Status: resp.StatusCode, Err: fmt.Errorf("decoding the answer: %w", err)}
	}
	return resp.StatusCode, nil
}

// drain reads what is left of a body so that the connection goes back to the pool.
func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	_ = resp.Body.Close()
}

// escape makes one path segment; CouchDB ids may contain "/".
func escape(segment string) string { return url.PathEscape(segment) }

func marshal(v any) ([]byte, error) {
	if raw, ok := v.(json.RawMessage); ok {
		return raw, nil
	}
	return json.Marshal(v)
}

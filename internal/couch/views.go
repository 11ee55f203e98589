package couch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/couchbench/couchbench/internal/retry"
)

func viewPath(db, ddocID, view string) string {
	return dbPath(db) + "/" + designPath(ddocID) + "/_view/" + escape(view)
}

// ViewRow is one row of a view answer.
type ViewRow struct {
	ID    string          `json:"id,omitempty"`
	Key   json.RawMessage `json:"key"`
	Value json.RawMessage `json:"value"`
	Doc   json.RawMessage `json:"doc,omitempty"`
}

// QueryView runs a view query and decodes its rows. A query on an index that is not built
// blocks until CouchDB has built it (or answers 500 timeout while the build goes on).
func (c *Client) QueryView(ctx context.Context, db, ddocID, view string, params url.Values) ([]ViewRow, error) {
	var answer struct {
		Rows []ViewRow `json:"rows"`
	}
	_, err := c.call(ctx, request{method: http.MethodGet, path: viewPath(db, ddocID, view), query: params, accept: []int{http.StatusOK}}, &answer)
	return answer.Rows, err
}

// ViewRead is what a full streamed read of a view returned.
type ViewRead struct {
	Rows  int64
	Bytes int64
}

// ReadView reads a whole view answer as it streams and counts its rows, holding one row at
// a time: a full read of a large view (seed 002) must measure CouchDB, not the client's
// memory.
func (c *Client) ReadView(ctx context.Context, db, ddocID, view string, params url.Values) (ViewRead, error) {
	path := viewPath(db, ddocID, view)
	resp, err := c.send(ctx, request{method: http.MethodGet, path: path, query: params, accept: []int{http.StatusOK}})
	if err != nil {
		return ViewRead{}, err
	}
	defer drain(resp)
	counter := &countingReader{r: resp.Body}
	rows, err := countRows(json.NewDecoder(counter))
	if err != nil {
		return ViewRead{}, &Error{Method: http.MethodGet, Path: path, Status: resp.StatusCode, Err: fmt.Errorf("reading rows: %w", err)}
	}
	_, _ = io.Copy(io.Discard, counter)
	return ViewRead{Rows: rows, Bytes: counter.n}, nil
}

// countRows walks {"total_rows":..,"rows":[...]} and counts the elements of "rows".
func countRows(dec *json.Decoder) (int64, error) {
	if err := expectDelim(dec, '{'); err != nil {
		return 0, err
	}
	var rows int64
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return rows, err
		}
		if tok != "rows" {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return rows, err
			}
			continue
		}
		if err := expectDelim(dec, '['); err != nil {
			return rows, err
		}
		var row json.RawMessage
		for dec.More() {
			if err := dec.Decode(&row); err != nil {
				return rows, err
			}
			rows++
		}
		if err := expectDelim(dec, ']'); err != nil {
			return rows, err
		}
	}
	return rows, expectDelim(dec, '}')
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok != want {
		return fmt.Errorf("expected %q, found %v", want, tok)
	}
	return nil
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// WaitForView sends a view request until CouchDB answers 200: a request on an index that
// is not built blocks until it is, and in a cluster it can answer 500 timeout (after 60 s
// by default) while the build goes on behind it. It rides through those timeouts, which it
// counts and returns, and through a server that does not answer at all or answers 502, 503
// or 504 (a node or a proxy restarting) for up to the client's Waits.Outage in a row.
//
// Any other error answer fails at once. On real Apache CouchDB 3.4.3 a view whose language
// the server does not know answers 500 {"error":"unknown_query_language"}, one whose code
// does not compile 500 {"error":"map_compilation_error"} or an Erlang error term: asking
// again answers the same, and riding through every 5xx, as this did before, made a run
// with such an arm wait forever.
func (c *Client) WaitForView(ctx context.Context, db, ddocID, view string, params url.Values) (int, error) {
	// The timeouts are asked again as often as outages are, for as long as the build takes.
	tries, _, err := retry.Policy{Backoff: c.waits.Outage.Backoff}.Until(ctx, func(ctx context.Context) (bool, error) {
		_, expired, err := c.Outlast(ctx, unreachable, func() error {
			_, err := c.QueryView(ctx, db, ddocID, view, params)
			return err
		})
		var ce *Error
		switch {
		case err == nil:
			return true, nil
		case ctx.Err() != nil:
			return false, ctx.Err()
		case expired:
			return false, fmt.Errorf("view %s of %s: CouchDB did not answer for %v: %w", view, ddocID, c.waits.Outage.Limit, err)
		case !errors.As(err, &ce) || ce.Status != http.StatusInternalServerError || ce.Name != "timeout":
			return false, fmt.Errorf("view %s of %s: %w", view, ddocID, err)
		}
		return false, nil
	})
	return tries - 1, err
}

// unreachable: no answer at all (not the caller's own cancel or deadline), or a gateway's
// 502, 503 or 504.
func unreachable(err error) bool {
	var ce *Error
	if !errors.As(err, &ce) {
		return false
	}
	switch ce.Status {
	case 0:
		return Transient(err)
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

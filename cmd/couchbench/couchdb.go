package main

import (
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/couch"
)

// explain adds to an error what a user can do about it: after CouchDB's 401, how to pass a
// server admin's credentials, and which credentials, if any, it refused.
func explain(err error, o stepOptions, creds couch.Credentials) error {
	if couch.StatusOf(err) != http.StatusUnauthorized {
		return err
	}
	how := "set COUCHDB_USER and COUCHDB_PASSWORD to a server admin's name and password, or pass --credentials-dir DIR " +
		"with files \"username\" and \"password\""
	switch {
	case creds.Username == "":
		return fmt.Errorf("%w\nCouchDB wants a server admin, and no credentials were given: %s", err, how)
	case o.credentialsDir != "":
		return fmt.Errorf("%w\nCouchDB refused user %q from --credentials-dir %s (a wrong password, or not a server admin): %s",
			err, creds.Username, o.credentialsDir, how)
	}
	return fmt.Errorf("%w\nCouchDB refused user %q from COUCHDB_USER and COUCHDB_PASSWORD (a wrong password, or not a server admin): %s",
		err, creds.Username, how)
}

// armValues are a flag's ARM=VALUE's by arm name: --arm-url's (arms' own CouchDBs) or
// --arm-pid's and --arm-pods' (their servers' processes and pods).
type armValues map[string]string

func (a armValues) String() string {
	out := make([]string, 0, len(a))
	for _, arm := range slices.Sorted(maps.Keys(a)) {
		out = append(out, arm+"="+a[arm])
	}
	return strings.Join(out, ",")
}

func (a armValues) Type() string { return "ARM=VALUE" }

func (a armValues) Set(v string) error {
	arm, value, ok := strings.Cut(v, "=")
	if !ok || arm == "" || value == "" {
		return fmt.Errorf("%q is not ARM=VALUE", v)
	}
	if prev, given := a[arm]; given {
		return fmt.Errorf("arm %s given twice (%s and %s)", arm, prev, value)
	}
	a[arm] = value
	return nil
}

// targets are the arms' CouchDBs: a client for each (arms with one URL and one user share
// one), and what k6 and error messages need of them.
type targets struct {
	// client is --url's (nil when every arm has its own); servers the arms' own.
	client  *couch.Client
	servers map[string]*couch.Client
	// urls and creds are every arm's, by name; creds[""] are --url's.
	urls  map[string]string
	creds map[string]couch.Credentials
}

// target is an arm's CouchDB, for k6.
func (t targets) target(arm string) (string, couch.Credentials) { return t.urls[arm], t.creds[arm] }

// clientOf is the client of an arm's CouchDB.
func (t targets) clientOf(arm string) *couch.Client {
	if c, ok := t.servers[arm]; ok {
		return c
	}
	return t.client
}

// clients connects to the arms' CouchDBs: --url (or the spec's existing URL) for every arm,
// and --arm-url's for arms of their own, whose credentials come from --credentials-dir/ARM
// when that exists. A URL is needed for every arm that runs.
func clients(o stepOptions, bench *benchv1.CouchBenchmark, arms []string) (targets, error) {
	url := o.url
	if url == "" && bench.Spec.CouchDB.Existing != nil {
		url = bench.Spec.CouchDB.Existing.URL
	}
	all := armNames(bench)
	for arm := range o.armURLs {
		if !slices.Contains(all, arm) {
			return targets{}, usageError{fmt.Errorf("--arm-url %s=...: the benchmark has no query server %q", arm, arm)}
		}
	}
	if len(arms) == 0 {
		arms = all
	}
	shared := false // an arm without a CouchDB of its own runs against url
	for _, arm := range arms {
		if _, own := o.armURLs[arm]; !own {
			if url == "" {
				return targets{}, usageError{fmt.Errorf("--url is required for query server %s (the benchmark provisions its CouchDB, "+
					"so it names none; or give it one with --arm-url %s=URL)", arm, arm)}
			}
			shared = true
		}
	}
	// Arms with one URL and one user share a client: they share a CouchDB, which the
	// runner then sets up once for them all (the operator hands every arm its own
	// credentials directory, the same Secret for arms of one CouchDB).
	type key struct {
		url   string
		creds couch.Credentials
	}
	opened := map[key]*couch.Client{}
	t := targets{servers: map[string]*couch.Client{}, urls: map[string]string{}, creds: map[string]couch.Credentials{}}
	open := func(arm, u, dir string) (*couch.Client, error) {
		creds, err := credentials(dir)
		if err != nil {
			return nil, err
		}
		t.urls[arm], t.creds[arm] = u, creds
		if c, ok := opened[key{u, creds}]; ok {
			return c, nil
		}
		c, err := couch.New(u, creds, couch.Options{MaxConns: maxConns(bench.Spec)})
		opened[key{u, creds}] = c
		return c, err
	}
	// Only arms without an --arm-url need url and the credentials at the top of
	// --credentials-dir: the operator names every arm's CouchDB, also an existing one, and
	// mounts only the arms' own directories.
	if shared {
		c, err := open("", url, o.credentialsDir)
		if err != nil {
			return targets{}, err
		}
		t.client = c
		for _, arm := range arms {
			t.urls[arm], t.creds[arm] = url, t.creds[""]
		}
	}
	for arm, u := range o.armURLs {
		dir := o.credentialsDir
		if own := filepath.Join(dir, arm); dir != "" && isDir(own) {
			dir = own
		}
		c, err := open(arm, u, dir)
		if err != nil {
			return targets{}, fmt.Errorf("query server %s: %w", arm, err)
		}
		t.servers[arm] = c
	}
	return t, nil
}

// armNames are the names of the benchmark's query servers, its arms.
func armNames(bench *benchv1.CouchBenchmark) []string {
	names := make([]string, len(bench.Spec.QueryServers))
	for i, q := range bench.Spec.QueryServers {
		names[i] = q.Name
	}
	return names
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// maxConns sizes the connection pool for the most concurrent requests any step makes, plus
// two: the /_active_tasks poller and a probe beside a view build's request to every shard
// copy (q x n of them; n unset is at most 3).
func maxConns(spec benchv1.CouchBenchmarkSpec) int {
	replicas, shards := int32(3), spec.Dataset.Shards
	if spec.Dataset.Replicas != nil {
		replicas = *spec.Dataset.Replicas
	}
	for _, qs := range spec.QueryServers {
		if qs.Shards != nil {
			shards = max(shards, *qs.Shards)
		}
	}
	n := max(int(spec.Dataset.Concurrency), int(shards*replicas))
	if w := spec.Workloads.Writes; w != nil {
		if w.ParallelBulk != nil {
			n = max(n, int(w.ParallelBulk.Clients))
		}
		if w.BatchOK != nil {
			n = max(n, int(w.BatchOK.Clients))
		}
	}
	return n + 2
}

// credentials reads the CouchDB user from a directory (a mounted Secret) or the
// environment. Having none is allowed (a server in admin party mode).
func credentials(dir string) (couch.Credentials, error) {
	if dir != "" {
		read := func(name string) (string, error) {
			data, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				return "", fmt.Errorf("credentials: %w", err)
			}
			return strings.TrimRight(string(data), "\r\n"), nil
		}
		user, err := read("username")
		if err != nil {
			return couch.Credentials{}, err
		}
		password, err := read("password")
		return couch.Credentials{Username: user, Password: password}, err
	}
	return couch.Credentials{Username: os.Getenv("COUCHDB_USER"), Password: os.Getenv("COUCHDB_PASSWORD")}, nil
}

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/couchbench/couchbench/internal/clustersetup"
	"github.com/couchbench/couchbench/internal/couch"
)

// clusterCommand is `couchbench cluster`: the operator's Job that makes each arm's provisioned
// CouchDB a cluster of its size before the first step (the operator itself sends CouchDB
// nothing).
var clusterCommand = command{
	name: "cluster", summary: "set up CouchDB clusters (finish_cluster) and wait until every node has joined",
	usage:    "couchbench cluster --nodes N (--url URL | --arm-url ARM=URL...) [--credentials-dir DIR]",
	examples: "couchbench cluster --nodes 3 --url http://couchdb:5984\ncouchbench cluster --nodes 3 --arm-url js=http://a:5984 --arm-url py=http://b:5984 --credentials-dir /etc/creds",
	flags:    clusterFlags,
}

func clusterFlags(fs *flag.FlagSet) func([]string, io.Writer, io.Writer) error {
	var url, credentialsDir string
	urls := armURLs{}
	fs.StringVar(&url, "url", "", "CouchDB `URL`, without credentials")
	fs.Var(urls, "arm-url", "an arm's own CouchDB, `ARM=URL` (repeatable); its credentials from --credentials-dir/ARM")
	fs.StringVar(&credentialsDir, "credentials-dir", "", "`directory` with files \"username\" and \"password\" (a mounted Secret)")
	nodes := fs.Int("nodes", 0, "the cluster's size: the `number` of nodes each CouchDB must have joined")
	return func(args []string, _, stderr io.Writer) error {
		switch {
		case len(args) > 0:
			return usageError{fmt.Errorf("unexpected argument %q", args[0])}
		case *nodes < 1:
			return usageError{errors.New("--nodes must be at least 1")}
		case (url == "") == (len(urls) == 0):
			return usageError{errors.New("name the CouchDB with --url, or each arm's with --arm-url (one of them)")}
		}
		if url != "" {
			urls[""] = url
		}
		// SIGTERM (the Job's deadline) ends the wait with what was seen.
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		for _, arm := range slices.Sorted(maps.Keys(urls)) {
			creds, err := credentials(credentialsDir)
			if arm != "" && credentialsDir != "" {
				creds, err = credentials(filepath.Join(credentialsDir, arm))
			}
			if err != nil {
				return err
			}
			c, err := couch.New(urls[arm], creds, couch.Options{})
			if err != nil {
				return err
			}
			if err := clustersetup.Wait(ctx, c, *nodes, stderr); err != nil {
				return err
			}
		}
		return nil
	}
}

package main

import (
	"context"
	"errors"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/couchbench/couchbench/internal/clustersetup"
	"github.com/couchbench/couchbench/internal/couch"
)

// newClusterCommand is `couchbench cluster`: the operator's Job that makes each arm's
// provisioned CouchDB a cluster of its size before the first step (the operator itself sends
// CouchDB nothing).
func newClusterCommand() *cobra.Command {
	var url, credentialsDir string
	var nodes int
	urls := armValues{}
	cmd := &cobra.Command{
		Use:   "cluster --nodes N (--url URL | --arm-url ARM=URL...) [--credentials-dir DIR]",
		Short: "set up CouchDB clusters (finish_cluster) and wait until every node has joined",
		Example: examples("couchbench cluster --nodes 3 --url http://couchdb:5984",
			"couchbench cluster --nodes 3 --arm-url js=http://a:5984 --arm-url py=http://b:5984 --credentials-dir /etc/creds"),
		Args:              noArgs,
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case nodes < 1:
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
				dir := credentialsDir
				if arm != "" && credentialsDir != "" {
					dir = filepath.Join(credentialsDir, arm)
				}
				creds, err := credentials(dir)
				if err != nil {
					return err
				}
				c, err := couch.New(urls[arm], creds, couch.Options{})
				if err != nil {
					return err
				}
				if err := clustersetup.Wait(ctx, c, nodes, cmd.ErrOrStderr()); err != nil {
					return err
				}
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&url, "url", "", "CouchDB `URL`, without credentials")
	fs.Var(urls, "arm-url", "an arm's own CouchDB, `ARM=URL` (repeatable); its credentials from --credentials-dir/ARM")
	fs.StringVar(&credentialsDir, "credentials-dir", "", "`directory` with files \"username\" and \"password\" (a mounted Secret)")
	fs.IntVar(&nodes, "nodes", 0, "the cluster's size: the `number` of nodes each CouchDB must have joined")
	cobra.CheckErr(cobra.MarkFlagDirname(fs, "credentials-dir"))
	return cmd
}

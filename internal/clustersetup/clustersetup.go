// Package clustersetup makes a provisioned CouchDB a cluster of the size asked for: it sends
// {"action":"finish_cluster"} once every node has joined, and waits until /_membership lists
// every node. The operator runs it in a Job of the benchmark's namespace (`couchbench
// cluster`), so that the operator itself never sends a request to a CouchDB.
package clustersetup

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/couchbench/couchbench/internal/couch"
)

// Poll is how often a CouchDB that is not a whole cluster yet is asked again.
const Poll = 2 * time.Second

// Wait makes the CouchDB of c a cluster of nodes nodes and returns once it is one, or when ctx
// ends, with an error that says how far it got. Every answer short of a cluster (a node not
// joined yet, a CouchDB that does not answer yet) is asked again after Poll; progress goes to
// log, one line per change.
func Wait(ctx context.Context, c *couch.Client, nodes int, log io.Writer) error {
	last := ""
	for {
		state, done := setUp(ctx, c, nodes)
		if done {
			fmt.Fprintf(log, "%s: %s\n", c.URL(), state)
			return nil
		}
		if state != last {
			fmt.Fprintf(log, "%s: %s\n", c.URL(), state)
			last = state
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s is not a cluster of %d nodes: %s", c.URL(), nodes, state)
		case <-time.After(Poll):
		}
	}
}

// setUp takes one step towards the cluster and says where it stands.
func setUp(ctx context.Context, c *couch.Client, nodes int) (state string, done bool) {
	if nodes > 1 {
		setup, err := c.ClusterSetupState(ctx)
		if err != nil {
			return fmt.Sprintf("asking for its cluster setup: %v", err), false
		}
		if setup != "cluster_finished" {
			if err := c.FinishCluster(ctx); err != nil {
				return fmt.Sprintf("cluster setup %s; finish_cluster: %v", setup, err), false
			}
		}
	}
	m, err := c.Membership(ctx)
	if err != nil {
		return fmt.Sprintf("asking for its membership: %v", err), false
	}
	state = fmt.Sprintf("%d of %d nodes joined (cluster_nodes %v, all_nodes %v)", len(m.ClusterNodes), nodes, m.ClusterNodes, m.AllNodes)
	return state, len(m.ClusterNodes) == nodes && len(m.AllNodes) == nodes
}

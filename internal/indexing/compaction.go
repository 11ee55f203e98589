package indexing

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/couchbench/couchbench/internal/couch"
)

// CouchDB 3.x compacts view files on its own (smoosh). Recorded on CouchDB 3.4: about 5 s
// into a 200k-document build the compactor starts a view compaction, its catch-up re-maps
// changes, and the build does 26-37% more map calls and runs 20-30% slower. Setting
// max_size of smoosh's two view channels to 1 byte gives every view file priority 0, so no
// view compaction starts; deleting the keys again restores CouchDB's defaults.
var viewCompactionChannels = []string{"smoosh.ratio_views", "smoosh.slack_views"}

const pausedMaxSize = "1"

// savedSetting is a configuration value as it was before the pause.
type savedSetting struct {
	node, section string
	value         string
	set           bool
}

// PauseViewCompaction stops automatic view compaction on every node and returns the
// function that restores each setting as it was. Both ride through a node that does not
// answer (askThroughOutage): a node can stop as the step begins or ends. The restore runs
// with its own timeout, so that it also works after ctx has ended (an interrupted run); it
// restores the nodes at once, each on its own, so that a node that stays down costs the
// others nothing, and gives up a node's other settings once one of them could not be set.
// Of w (zero fields: DefaultWaits') it takes Restore, the restore's own timeout.
func PauseViewCompaction(ctx context.Context, c *couch.Client, nodes []string, w Waits) (restore func() error, err error) {
	var saved []savedSetting
	restore = func() error {
		budget := w.orDefaults().Restore
		if ctx.Err() == nil {
			budget += c.Waits().Outage.Limit
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), budget)
		defer cancel()
		var (
			mu   sync.Mutex
			errs []error
			wg   sync.WaitGroup
		)
		for _, node := range nodes {
			wg.Go(func() {
				for _, s := range saved {
					if s.node != node {
						continue
					}
					_, err := askThroughOutage(rctx, c, "node "+node, func() error {
						if s.set {
							return c.SetConfig(rctx, node, s.section, "max_size", s.value)
						}
						return c.DeleteConfig(rctx, node, s.section, "max_size")
					})
					if err != nil {
						mu.Lock()
						errs = append(errs, fmt.Errorf("restoring [%s] max_size on %s (and the node's settings after it): %w", s.section, node, err))
						mu.Unlock()
						return
					}
				}
			})
		}
		wg.Wait()
		return errors.Join(errs...)
	}
	for _, node := range nodes {
		for _, section := range viewCompactionChannels {
			var (
				value string
				set   bool
			)
			if _, err := askThroughOutage(ctx, c, "node "+node, func() (err error) {
				value, set, err = c.Config(ctx, node, section, "max_size")
				return err
			}); err != nil {
				return restore, fmt.Errorf("reading [%s] max_size on %s: %w", section, node, err)
			}
			if set && value == pausedMaxSize {
				// Another run's pause, not the server's setting: restoring it would leave
				// compaction paused for good once both runs are done.
				set = false
			}
			if _, err := askThroughOutage(ctx, c, "node "+node, func() error {
				return c.SetConfig(ctx, node, section, "max_size", pausedMaxSize)
			}); err != nil {
				return restore, fmt.Errorf("pausing view compaction ([%s] max_size) on %s: %w", section, node, err)
			}
			saved = append(saved, savedSetting{node: node, section: section, value: value, set: set})
		}
	}
	return restore, nil
}

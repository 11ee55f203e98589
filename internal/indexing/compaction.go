package indexing

import (
	"context"
	"errors"
	"fmt"
	"time"

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
// function that restores each setting as it was. The restore runs with its own timeout,
// so that it also works after ctx has ended (an interrupted run).
func PauseViewCompaction(ctx context.Context, c *couch.Client, nodes []string) (restore func() error, err error) {
	var saved []savedSetting
	restore = func() error {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		var errs []error
		for _, s := range saved {
			var err error
			if s.set {
				err = c.SetConfig(rctx, s.node, s.section, "max_size", s.value)
			} else {
				err = c.DeleteConfig(rctx, s.node, s.section, "max_size")
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("restoring [%s] max_size on %s: %w", s.section, s.node, err))
			}
		}
		return errors.Join(errs...)
	}
	for _, node := range nodes {
		for _, section := range viewCompactionChannels {
			value, set, err := c.Config(ctx, node, section, "max_size")
			if err != nil {
				return restore, fmt.Errorf("reading [%s] max_size on %s: %w", section, node, err)
			}
			if set && value == pausedMaxSize {
				// Another run's pause, not the server's setting: restoring it would leave
				// compaction paused for good once both runs are done.
				set = false
			}
			if err := c.SetConfig(ctx, node, section, "max_size", pausedMaxSize); err != nil {
				return restore, fmt.Errorf("pausing view compaction ([%s] max_size) on %s: %w", section, node, err)
			}
			saved = append(saved, savedSetting{node: node, section: section, value: value, set: set})
		}
	}
	return restore, nil
}

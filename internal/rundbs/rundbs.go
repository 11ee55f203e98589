// Package rundbs is the databases a run makes in CouchDB, taken together: which they are,
// from the benchmark's spec or by the run's name prefix, and deleting them. couchbench
// deletes them after a run and in couchbench clean, the operator after a run and when its
// benchmark is deleted; both use this package so that they delete the same databases, and
// the operator need not link the runner to do it.
package rundbs

import (
	"context"
	"errors"
	"fmt"
	"strings"

	benchv1 "github.com/couchbench/couchbench/api/v1alpha1"
	"github.com/couchbench/couchbench/internal/couch"
	"github.com/couchbench/couchbench/internal/dataset"
	"github.com/couchbench/couchbench/internal/names"
)

// Databases are the databases a run of bench with runID makes for an arm: each profile's
// (which its design documents and barriers live in), each insert mode's on each profile
// (deleted after every round, unless the round failed) and each runner part's probe's
// (deleted after the probe, unless the runner died first). Nothing else of a run stays in
// CouchDB, so deleting these leaves the server as the run found it.
func Databases(bench *benchv1.CouchBenchmark, runID, arm string) []string {
	spec := bench.Spec
	var dbs []string
	for _, profile := range spec.Dataset.Profiles {
		db := names.Database(bench.Name, runID, arm, dataset.ProfileName(profile))
		dbs = append(dbs, db)
		if spec.Workloads.Writes != nil {
			for _, mode := range spec.Workloads.Writes.Modes() {
				dbs = append(dbs, names.WriteDatabase(db, mode.Name))
			}
		}
	}
	for part := range max(spec.Runner.Parallelism, 1) {
		dbs = append(dbs, names.ProbeDatabase(bench.Name, runID, arm, int(part)))
	}
	return dbs
}

// DeleteDatabases deletes dbs from c and returns those that were there. It goes on past a
// database CouchDB refuses to delete, so that one refusal leaves no more behind than it
// must, and returns every error; it stops when CouchDB does not answer, which the next
// database would only wait for again.
func DeleteDatabases(ctx context.Context, c *couch.Client, dbs []string) (deleted []string, err error) {
	var errs []error
	for _, db := range dbs {
		found, derr := c.DeleteDB(ctx, db)
		if found {
			deleted = append(deleted, db)
		}
		if derr == nil {
			continue
		}
		errs = append(errs, fmt.Errorf("deleting database %s: %w", db, derr))
		if couch.StatusOf(derr) == 0 {
			break
		}
	}
	return deleted, errors.Join(errs...)
}

// RunDatabases lists the databases on c whose names begin with the run's prefix
// (names.RunPrefix): what is left of a run whose spec is not at hand, arms and profiles it
// no longer has included.
func RunDatabases(ctx context.Context, c *couch.Client, benchmark, runID string) ([]string, error) {
	prefix := names.RunPrefix(benchmark, runID)
	all, err := c.AllDBs(ctx, prefix, prefix+"\ufff0")
	if err != nil {
		return nil, fmt.Errorf("listing the databases of %s: %w", c.URL(), err)
	}
	var dbs []string
	for _, db := range all {
		if strings.HasPrefix(db, prefix) {
			dbs = append(dbs, db)
		}
	}
	return dbs, nil
}

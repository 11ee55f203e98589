// Package names is the one place that names what a run makes in CouchDB: its run id, the
// databases of each arm and profile, the design documents of each workload, and the tag of
// the k6 load. The runner creates them, the k6 script reads them, and the operator hands them
// to both, so all three must agree; this package depends on nothing of the project's.
package names

import (
	"strconv"
	"strings"
)

// RunID names one benchmark run in CouchDB: the start of the benchmark's UID, so that two
// runs (two benchmarks, or one deleted and applied again) sharing a CouchDB keep apart and the
// steps of one run, separate Jobs, find each other's databases.
func RunID(uid string) string {
	return uid[:min(8, len(uid))]
}

// Database is the database of one arm and profile: "cb-<benchmark>[-<run id>]-<arm>-<profile>".
func Database(benchmark, runID, arm, profile string) string {
	return RunPrefix(benchmark, runID) + dbSafe(arm+"-"+profile)
}

// RunPrefix begins the name of every database of a run: "cb-<benchmark>[-<run id>]-". It
// tells the run's databases from every other run's of the benchmark, but not always from
// another benchmark's: benchmark "a" run "b1" and benchmark "a-b1" share "cb-a-b1-".
func RunPrefix(benchmark, runID string) string {
	parts := []string{"cb", benchmark}
	if runID != "" {
		parts = append(parts, runID)
	}
	return dbSafe(strings.Join(parts, "-") + "-")
}

// ProbeDatabase is the one-document database in which runner part part (from 0) asks an
// arm's CouchDB what runs its views: every part asks, each in a database of its own.
func ProbeDatabase(benchmark, runID, arm string, part int) string {
	db := Database(benchmark, runID, arm, "probe")
	if part > 0 {
		db += "-" + strconv.Itoa(part)
	}
	return db
}

// WriteDatabase is the database that one insert mode of the writes workload fills:
// "<profile database>-w-<mode>".
func WriteDatabase(profileDB, mode string) string {
	return profileDB + "-w-" + dbSafe(mode)
}

// dbSafe lower-cases name and makes "_" of every character CouchDB does not allow in a
// database name (it allows lowercase letters, digits and _$()+-/; we keep to - and _).
func dbSafe(name string) string {
	return strings.Map(func(r rune) rune {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, strings.ToLower(name))
}

// IndexingDesignDoc is the design document of one timed build: a nonce per build makes its
// index new (CouchDB shares an index between design documents with identical views).
func IndexingDesignDoc(nonce string) string { return "_design/cb-idx-" + nonce }

// IndexingTwin is the k-th twin of an indexing design document: the same views under
// another id, which places it in another shard range (see internal/indexing.Build).
func IndexingTwin(ddocID string, k int) string { return ddocID + "." + strconv.Itoa(k) }

// ViewReadsDesignDoc holds seed 002's emit-doc and emit-null views. It is the same for every
// run on a database, so the views are built once and every read of them reads a built index.
const ViewReadsDesignDoc = "_design/cb-viewreads"

// ProbeDesignDoc holds the view that tells which query server runs an arm's language.
const ProbeDesignDoc = "_design/cb-probe"

// K6LoadTag tags the measured requests of the k6 script (scripts/reads.js sets it; its setup's
// requests lack it): the read results are k6's sub-metrics of this tag.
const K6LoadTag = "couchbench:load"

// Command duet measures two arms' view builds, each arm on a CouchDB server of its own on one
// machine, in two orders: taking turns (the runner's order today, internal/turns: one arm's
// build, then the other's, in a fresh random order each round) and in duet (both arms' builds
// started at the same moment, so that both meet the same neighbours). Every build's wall time
// (internal/indexing's timing) and the CPU time its server spent on it (internal/cpucost, from
// the server's cgroup; the process tree's /proc reading beside it) are recorded round by
// round, one JSON line per round, for `duet replay` to compare the orders' round ratios and to
// replay them through internal/sequential.
//
//	duet run -a URL -a-dir DIR -b URL -b-dir DIR [-order turns|duet|alternate] [-runs N]
//	         [-rounds R | -target 0.05 -limit 15m [-stop-on cpu]] [-docs 20000] [-label L] -out FILE
//	duet replay [-alpha 0.01] [-target 0.05] [-tolerance 0] [-simulated 1000] FILE...
//	duet import -label L [-load FILE] DOC.json... > FILE
//
// The servers are the kit's (../shared/apache-couchdb/couchdb.sh start --dir DIR ...); -a-dir
// and -b-dir name their directories, whose node1/couchdb.pid is the process tree moved into a
// cgroup of its own for the run (root is needed). Credentials: COUCHDB_USER, COUCHDB_PASSWORD.
// Arm a is the reference, b the candidate: ratios are b over a. `duet import` turns the
// results documents of the operator's runner (couchbench run --arm-pid) into the same
// records, so that replay judges the runner's rounds as it does its own.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: duet run|replay|import [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case kindRun:
		err = runCommand(ctx, os.Args[2:])
	case "replay":
		err = replayCommand(os.Args[2:], os.Stdout)
	case "import":
		err = importCommand(os.Args[2:], os.Stdout)
	default:
		err = fmt.Errorf("unknown command %q: run, replay or import", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "duet:", err)
		os.Exit(1)
	}
}

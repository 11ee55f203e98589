// Package measured holds what each workload measured, as the runners write it into their
// results documents and the operator and couchbench read it back: a view build, a seeding,
// an insert mode's writes, a view's full reads, a node's load. The workloads that measure
// them (internal/indexing, seeding, writes, viewreads, serverload) run in the Jobs; this
// package runs nothing, so the manager links it without them.
package measured

package measured

// NodeLoad is one node's load over a step (serverload.Watch): the highest values seen, and
// the VM's work rate.
type NodeLoad struct {
	Node    string `json:"node"`
	Samples int    `json:"samples"`
	// FailedSamples counts polls without an answer (a node that was away).
	FailedSamples           int   `json:"failedSamples,omitempty"`
	MaxRunQueue             int   `json:"maxRunQueue"`
	MaxDirtyRunQueue        int   `json:"maxDirtyRunQueue"`
	MaxProcesses            int   `json:"maxProcesses"`
	MaxOSProcesses          int   `json:"maxOsProcesses"`
	MaxMemoryBytes          int64 `json:"maxMemoryBytes"`
	MaxInternalReplications int   `json:"maxInternalReplicationJobs"`
	// ReductionsPerSecond is the Erlang VM's work over the step, from the first answer to the
	// last (0 with fewer than two, or across a restart that reset the counter).
	ReductionsPerSecond float64 `json:"reductionsPerSecond"`
}

package v1alpha1

import "fmt"

// WriteMode is one way of writing that a writes workload asks for: what the runner runs and
// what names the mode's database, which the operator deletes after the run.
// +kubebuilder:object:generate=false
type WriteMode struct {
	// Name: bulk-<size>, parallelBulk-<clients>x<size>, batchOk-<clients>, serial.
	Name      string
	Clients   int
	BatchSize int // 0: single documents
	BatchOK   bool
}

// Modes lists the modes the workload asks for, in the order they run.
func (w *WritesWorkload) Modes() []WriteMode {
	var modes []WriteMode
	for _, size := range w.BulkBatchSizes {
		modes = append(modes, WriteMode{Name: fmt.Sprintf("bulk-%d", size), Clients: 1, BatchSize: int(size)})
	}
	if p := w.ParallelBulk; p != nil {
		modes = append(modes, WriteMode{Name: fmt.Sprintf("parallelBulk-%dx%d", p.Clients, p.BatchSize),
			Clients: int(p.Clients), BatchSize: int(p.BatchSize)})
	}
	if b := w.BatchOK; b != nil {
		modes = append(modes, WriteMode{Name: fmt.Sprintf("batchOk-%d", b.Clients), Clients: int(b.Clients), BatchOK: true})
	}
	if w.Serial {
		modes = append(modes, WriteMode{Name: "serial", Clients: 1})
	}
	return modes
}

package v1alpha1

import "k8s.io/apimachinery/pkg/api/resource"

// Dataset is the data every arm is seeded with. The generator is deterministic: the same
// seed, documents and profile give the same documents, ids and expected view results.
type Dataset struct {
	// Documents is the number of documents per arm and profile.
	// +optional
	// +kubebuilder:default=100000
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000000
	Documents int64 `json:"documents,omitempty"`

	// IDs are the documents' ids. Sequential: the zero-padded index ("0000000042"), which
	// sorts in insertion order, so CouchDB appends to its B-trees (seed 003's advice).
	// Random: 32 hex characters in no order, like CouchDB's random UUIDs, so every write
	// lands somewhere in the B-tree (seed 003) and every include_docs row is a lookup
	// elsewhere in the file (seed 002). Both are deterministic: the same seed gives the same
	// ids, and the k6 script computes them too.
	// +optional
	// +kubebuilder:default=Sequential
	IDs DocumentIDs `json:"ids,omitempty"`

	// Profiles are the document shapes to compare; each is seeded into a database of its
	// own and every workload runs on each (seed 000's small vs large documents).
	// +optional
	// +kubebuilder:default={{type: small}}
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:XValidation:rule="self.all(p, self.exists_one(o, o.type == p.type && (has(o.targetBytes) ? has(p.targetBytes) && o.targetBytes == p.targetBytes : !has(p.targetBytes))))",message="dataset.profiles must not repeat a profile (the same type and targetBytes)"
	Profiles []DocumentProfile `json:"profiles,omitempty"`

	// Seed drives the document generator, so a run can be repeated exactly.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	Seed int64 `json:"seed,omitempty"`

	// BatchSize is the number of documents per _bulk_docs request while seeding, at most
	// 10000 (seed 003's largest batch). CouchDB 3.x sets no count limit of its own; a
	// request is bounded by its size ([chttpd] max_http_request_size).
	// +optional
	// +kubebuilder:default=1000
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	BatchSize int32 `json:"batchSize,omitempty"`

	// MaxBatchBytes bounds a seeding request's documents in bytes: large documents make
	// smaller batches, so that the runner's memory stays near (concurrency+1) x this
	// whatever the profile, and no request meets CouchDB's [chttpd] max_http_request_size
	// (64 MiB by default). Between 64Ki and 1Gi.
	// +optional
	// +kubebuilder:default="16Mi"
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).compareTo(quantity('64Ki')) >= 0 && quantity(string(self)).compareTo(quantity('1Gi')) <= 0",message="dataset.maxBatchBytes must be between 64Ki and 1Gi, e.g. 16Mi"
	MaxBatchBytes *resource.Quantity `json:"maxBatchBytes,omitempty"`

	// SeedRepetitions loads the dataset this many times, each into a new database (arms that
	// share a CouchDB taking turns), so that seeding's docs/s is a median with its spread like
	// every workload's; the workloads read the last load.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=20
	SeedRepetitions int32 `json:"seedRepetitions,omitempty"`

	// Concurrency is the number of _bulk_docs requests in flight while seeding.
	// +optional
	// +kubebuilder:default=4
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	Concurrency int32 `json:"concurrency,omitempty"`

	// Shards is the databases' shard count, CouchDB's q. It is part of every indexing
	// number: each shard copy is indexed by its own indexer and query-server process, so
	// on a 2-core node q=1 vs q=2 halves or doubles the indexing rate.
	// +optional
	// +kubebuilder:default=2
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	Shards int32 `json:"shards,omitempty"`

	// Replicas is the number of copies of each shard, CouchDB's n. Unset: the smaller of 3
	// and the number of nodes; the value used is recorded with the results.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=16
	Replicas *int32 `json:"replicas,omitempty"`
}

// DocumentProfile is a document shape.
// +kubebuilder:validation:XValidation:rule="!has(self.targetBytes) || self.type == 'large'",fieldPath=".targetBytes",message="targetBytes applies only to the large profile; small is the seed's fixed score document of about 110 bytes"
type DocumentProfile struct {
	// Type small is the seed's score document (metadata.docType, metadata.createdAt,
	// username, score); large adds the seed's custom_data padding: 0-100 random keys,
	// each a base64 string of a repeated random string; tiny is seed 003's {"foo":"bar"}
	// for the insert modes (a benchmark with only the writes workload).
	// +required
	Type DocumentType `json:"type"`

	// TargetBytes steers the large profile's padding toward this average JSON size per
	// document. Unset: the seed's random padding as it is. At most 8000000, CouchDB's
	// default max_document_size.
	// +optional
	// +kubebuilder:validation:Minimum=256
	// +kubebuilder:validation:Maximum=8000000
	TargetBytes *int64 `json:"targetBytes,omitempty"`
}

// DocumentType is a document shape from the seed benchmarks.
// +kubebuilder:validation:Enum=small;large;tiny
type DocumentType string

const (
	DocumentSmall DocumentType = "small"
	DocumentLarge DocumentType = "large"
	// DocumentTiny is seed 003's {"foo":"bar"} document, for the writes workload only: it
	// has nothing for the views to read.
	DocumentTiny DocumentType = "tiny"
)

// DocumentIDs is how the documents' ids are made.
// +kubebuilder:validation:Enum=Sequential;Random
type DocumentIDs string

const (
	IDsSequential DocumentIDs = "Sequential"
	IDsRandom     DocumentIDs = "Random"
)

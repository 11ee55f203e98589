package helmrelease

import (
	"bytes"
	"crypto/sha256"
	_ "embed" // the built-in chart
	"encoding/hex"
)

// The Apache CouchDB Helm chart built into the operator: what a ChartRef that names no source
// installs, so that a cluster without internet access provisions CouchDB with no setting at
// all. builtin/README.md says where the archive comes from; builtin/LICENSE is its licence.
const (
	BuiltInChartName    = "couchdb"
	BuiltInChartVersion = "4.6.2"
)

//go:embed builtin/couchdb-4.6.2.tgz
var builtInArchive []byte

// BuiltInChartDigest is the SHA-256 of the built-in chart's archive, "sha256:<hex>", computed
// from the bytes the binary carries: the results' provenance records it.
var BuiltInChartDigest = func() string {
	sum := sha256.Sum256(builtInArchive)
	return "sha256:" + hex.EncodeToString(sum[:])
}()

// builtInSource names the built-in chart in messages.
const builtInSource = "the chart built into the operator"

// BuiltInArchive is a copy of the built-in chart's packaged archive (.tgz), for installing
// the same chart another way: from a ConfigMap, a chart repository or a registry.
func BuiltInArchive() []byte {
	return bytes.Clone(builtInArchive)
}

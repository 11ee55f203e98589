package helmrelease

import (
	"strings"
	"testing"
)

// The digest of the Apache CouchDB chart 4.6.2 as the project took it (builtin/README.md):
// a changed archive must be a deliberate change of this pin too.
const pinnedBuiltInDigest = "sha256:798858d59d924dbca46a639dc822c34dbf367c20a3d3b91f6bed46a4c2b244f4"

// A reference that names no source loads the chart the binary carries: the pinned Apache
// chart, named in messages and provenance with its digest; a version asked for must be its own.
func TestBuiltInChart(t *testing.T) {
	if BuiltInChartDigest != pinnedBuiltInDigest {
		t.Fatalf("the built-in archive's digest is %s, want the pinned %s (builtin/README.md)", BuiltInChartDigest, pinnedBuiltInDigest)
	}
	ctx := testContext(t)
	m := newManager(t, "")
	for _, ref := range []ChartRef{{}, {Version: BuiltInChartVersion}} {
		ch, err := m.LoadChart(ctx, ref)
		if err != nil {
			t.Fatalf("LoadChart(%+v): %v", ref, err)
		}
		if ch.Name() != BuiltInChartName || ch.Metadata.Version != BuiltInChartVersion {
			t.Errorf("LoadChart(%+v) = %s %s, want %s %s", ref, ch.Name(), ch.Metadata.Version, BuiltInChartName, BuiltInChartVersion)
		}
	}
	if s := (ChartRef{}).String(); !strings.Contains(s, "built into the operator") || !strings.Contains(s, pinnedBuiltInDigest) ||
		!strings.Contains(s, BuiltInChartVersion) {
		t.Errorf("ChartRef{}.String() = %q: it must say the chart is the operator's, its version and its digest", s)
	}

	_, err := m.LoadChart(ctx, ChartRef{Version: "4.5.0"})
	if err == nil {
		t.Fatal("LoadChart of the built-in chart at another version succeeded")
	}
	for _, want := range []string{"built into the operator", BuiltInChartVersion, "4.5.0"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}

	// Callers get a copy: the chart the operator installs cannot be changed through it.
	archive := BuiltInArchive()
	archive[0] ^= 0xff
	if builtInArchive[0] == archive[0] {
		t.Error("BuiltInArchive returned the embedded bytes themselves")
	}
}

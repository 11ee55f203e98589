// Package version says which build of couchbench this is, for the provenance of results:
// set at link time (-ldflags "-X github.com/couchbench/couchbench/internal/version.Version=...
// -X ...Commit=..."), as hack/images.sh and the Dockerfiles do, else read from the Go build
// information (the module version and the VCS revision go build records).
package version

import (
	"runtime"
	"runtime/debug"
)

// Version and Commit of this build; "" when unknown.
var (
	Version string
	Commit  string
)

// Build is what is known of this build.
type Build struct {
	// Version and Commit are "" when unknown.
	Version, Commit string
	// Modified: the commit's tree had changes that were not committed (go build's record).
	Modified bool
	// Go is the Go release that built it, and the platform it is for.
	Go string
}

// Read is this build.
func Read() Build {
	b := Build{Version: Version, Commit: Commit, Go: runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH}
	if info, ok := debug.ReadBuildInfo(); ok {
		if b.Version == "" && info.Main.Version != "(devel)" {
			b.Version = info.Main.Version
		}
		for _, s := range info.Settings {
			switch {
			case s.Key == "vcs.revision" && b.Commit == "":
				b.Commit = s.Value
			case s.Key == "vcs.modified" && Commit == "":
				b.Modified = s.Value == "true"
			}
		}
	}
	return b
}

// String is "version (commit)", or what of it is known.
func String() string {
	b := Read()
	switch {
	case b.Version == "" && b.Commit == "":
		return "unknown"
	case b.Commit == "":
		return b.Version
	case b.Version == "":
		return "commit " + b.Commit
	}
	return b.Version + " (" + b.Commit + ")"
}

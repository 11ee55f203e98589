// Package version says which build of couchbench this is, for the provenance of results:
// set at link time (-ldflags "-X github.com/couchbench/couchbench/internal/version.Version=...
// -X ...Commit=..."), as hack/images.sh and the Dockerfiles do, else read from the Go build
// information (the module version and the VCS revision go build records).
package version

import "runtime/debug"

// Version and Commit of this build; "" when unknown.
var (
	Version string
	Commit  string
)

// String is "version (commit)", or what of it is known.
func String() string {
	v, c := Version, Commit
	if info, ok := debug.ReadBuildInfo(); ok {
		if v == "" && info.Main.Version != "(devel)" {
			v = info.Main.Version
		}
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && c == "" {
				c = s.Value
			}
		}
	}
	switch {
	case v == "" && c == "":
		return "unknown"
	case c == "":
		return v
	case v == "":
		return "commit " + c
	}
	return v + " (" + c + ")"
}

# Sourced by the scripts that build commands from pinned Go modules (hack/envtest.sh,
# hack/kind-node-image.sh).
#
# go_binaries [--cgo] MODDIR LDFLAGS PACKAGE...: sets gobin to a directory holding each
# package's command (named as `go build -o DIR/` names it), building only those it lacks, in
# one `go build`. The directory is bin/go-binaries/<module>-<key>, where the key covers what
# the binaries are made of: the module's go.mod and go.sum, its own .go files and those of its
# ./packages, the Go version, cgo and LDFLAGS, but not which packages are asked for. So
# envtest's kube-apiserver and etcd and the kind node image's are one build: whichever asks
# first builds them, and the other finds them there. Without --cgo, CGO_ENABLED=0; with it,
# CGO_ENABLED=1 (a C compiler), for a module with C parts, linked statically by LDFLAGS'
# -extldflags -static where its own build does so.
go_binaries() {
  local cgo=0
  [ "$1" != --cgo ] || { cgo=1; shift; }
  local mod=$1 ldflags=$2 pkg name key missing=() names=() tmp
  shift 2
  key=$({
    cat "$mod/go.mod" "$mod/go.sum"
    for pkg in . "$@"; do [[ $pkg != ./* && $pkg != . ]] || cat "$mod/$pkg"/*.go 2>/dev/null || true; done
    go env GOVERSION
    echo "cgo=$cgo $ldflags"
  } | sha256sum | cut -c1-12)
  gobin=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/bin/go-binaries/$(basename "$(cd "$mod" && pwd)")-$key
  for pkg in "$@"; do
    name=${pkg##*/}
    [[ $pkg != . ]] || name=$(awk '$1 == "module" {n = split($2, p, "/"); print p[n]; exit}' "$mod/go.mod")
    [ -x "$gobin/$name" ] || { missing+=("$pkg"); names+=("$name"); }
  done
  ((${#missing[@]})) || return 0
  mkdir -p "$gobin"
  # Built aside and moved in, so that a build cut short leaves nothing that looks complete.
  tmp=$(mktemp -d "$gobin/.build.XXXXXX")
  "$(dirname "${BASH_SOURCE[0]}")/../heartbeat.sh" go-binaries "building ${names[*]} ($mod)" \
    env -u GOOS -u GOARCH GOFLAGS=-mod=readonly GOWORK=off CGO_ENABLED=$cgo \
    go build -C "$mod" -trimpath -buildvcs=false -ldflags "$ldflags" -o "$tmp/" "${missing[@]}" || {
    rm -rf "$tmp"
    return 1
  }
  mv -f "$tmp"/* "$gobin/"
  rm -rf "$tmp"
}

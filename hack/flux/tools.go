//go:build tools

// Package tools pins the two Flux controllers the e2e suite runs (test/e2e/flux_test.go):
// source-controller and kustomize-controller, built from their Go modules at one release
// (hack/flux/images.sh), because their images live on registries this project's machines
// cannot reach. Each controller's module replaces its own api module with ./api, a directory
// the module's zip leaves out (it is a module of its own); a replace in a dependency is
// ignored, so this module requires each api module at the controllers' release, and repeats
// the replace directives the controllers' builds need.
package tools

import (
	_ "github.com/fluxcd/kustomize-controller"
	_ "github.com/fluxcd/source-controller"
)

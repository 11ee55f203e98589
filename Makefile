# couchbench: a Kubernetes operator that runs CouchDB benchmarks as custom resources.
# `make help` lists the targets.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

IMG ?= couchbench/manager:dev

LOCALBIN ?= $(CURDIR)/bin
$(LOCALBIN):
	mkdir -p $(LOCALBIN)

## Tool versions (the Go module proxy here is a partial mirror: exact versions only).
CONTROLLER_TOOLS_VERSION ?= v0.23.0
KUSTOMIZE_VERSION ?= v5.8.2
GOLANGCI_LINT_VERSION ?= v2.15.0
GOTESTSUM_VERSION ?= v1.13.0
KIND_VERSION ?= v0.33.0
HELM_VERSION ?= v3.21.4
# promtool, for the alert rules, and prometheus, the server the dashboard's queries are tested
# on: from Debian's prometheus package (hack/promtool.sh).
PROMTOOL_VERSION ?= 2.42.0+ds-5+deb12u1
# setup-envtest of the controller-runtime release in go.mod.
SETUP_ENVTEST_VERSION ?= v0.24.1

CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen-$(CONTROLLER_TOOLS_VERSION)
KUSTOMIZE ?= $(LOCALBIN)/kustomize-$(KUSTOMIZE_VERSION)
GOLANGCI_LINT ?= $(LOCALBIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)
GOTESTSUM ?= $(LOCALBIN)/gotestsum-$(GOTESTSUM_VERSION)
KIND ?= $(LOCALBIN)/kind-$(KIND_VERSION)
HELM ?= $(LOCALBIN)/helm-$(HELM_VERSION)
PROMTOOL ?= $(LOCALBIN)/promtool-$(firstword $(subst +, ,$(PROMTOOL_VERSION)))
PROMETHEUS ?= $(LOCALBIN)/prometheus-$(firstword $(subst +, ,$(PROMTOOL_VERSION)))
SETUP_ENVTEST ?= $(LOCALBIN)/setup-envtest-$(SETUP_ENVTEST_VERSION)

# envtest's kube-apiserver and etcd, by hack/envtest.sh: downloaded by setup-envtest where it
# can reach its downloads, else built from Go modules; unless KUBEBUILDER_ASSETS is already
# set, in which case it is used as is. The targets that use it need $(SETUP_ENVTEST) built
# first. ENVTEST_PREBUILT names a directory of binaries built elsewhere that hack/envtest.sh
# copies instead of building when they report the pinned versions.
ENVTEST_ASSETS_DIR ?= $(LOCALBIN)/k8s
ENVTEST_PREBUILT ?=
ifeq ($(origin KUBEBUILDER_ASSETS), undefined)
KUBEBUILDER_ASSETS = $(shell SETUP_ENVTEST=$(SETUP_ENVTEST) hack/envtest.sh $(ENVTEST_ASSETS_DIR) $(ENVTEST_PREBUILT))
endif

# Real Apache CouchDB for the tests and benchmarks: the kit (a relocatable Apache CouchDB
# 3.4.3 and its couchdb.sh). hack/with-couchdb.sh starts a single node, a 3-node cluster and
# the fault tests' 3-node cluster from it on loopback (ports 15984, 25984-25986 and
# COUCHDB_FAULT_PORT.., data in bin/couchdb), runs the command and stops them again, also
# on failure.
COUCHDB_KIT ?= $(abspath $(CURDIR)/../shared/apache-couchdb)
# Node 1's port of the fault tests' own 3-node cluster (ports P..P+2, Erlang P+1000..P+1002).
COUCHDB_FAULT_PORT ?= 22984
GO_TEST_TIMEOUT ?= 30m

# k6, built from its Go module by hack/k6.sh unless K6 is set.
ifeq ($(origin K6), undefined)
K6 = $(shell hack/k6.sh $(LOCALBIN))
endif

.PHONY: all
all: build

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage:\n  make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) } ' $(MAKEFILE_LIST)

##@ Development

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate the CRD and RBAC manifests (config/ and the operator chart's templates/crds and files/) from the API and controller markers.
	hack/heartbeat.sh controller-gen "generating the CRDs and RBAC" \
		$(CONTROLLER_GEN) rbac:roleName=manager-role crd paths="./..." output:crd:artifacts:config=config/crd/bases
	# The chart installs and upgrades the CRDs from templates/crds (Helm's crds/ folder is
	# installed once and never upgraded), kept when the release is uninstalled.
	for f in config/crd/bases/*.yaml; do \
		{ echo '{{- if .Values.crds.create }}'; \
		  sed -e '1{/^---$$/d}' -e 's|^  annotations:$$|&\n    helm.sh/resource-policy: keep|' "$$f"; \
		  echo '{{- end }}'; } >"charts/couchbench-operator/templates/crds/$${f##*/}"; \
	done
	cp config/rbac/role.yaml charts/couchbench-operator/files/manager-role.yaml
	cp config/rbac/installer_role.yaml charts/couchbench-operator/files/installer-role.yaml
	cp config/cpu-cost/cpu_reader_role.yaml charts/couchbench-operator/files/cpu-reader-role.yaml
	cp config/prometheus/couchbench-rules.yaml charts/couchbench-operator/files/couchbench-rules.yaml

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate the API's DeepCopy methods.
	hack/heartbeat.sh controller-gen "generating DeepCopy" $(CONTROLLER_GEN) object:headerFile="hack/boilerplate.go.txt" paths="./..."

.PHONY: verify-generated
verify-generated: ## Fail if generated code or manifests are stale (they are regenerated in place).
	hack/verify-generated.sh

.PHONY: fmt
fmt: ## Run go fmt.
	go fmt ./...

.PHONY: vet
vet: ## Run go vet.
	hack/heartbeat.sh "go vet" "vetting ./..." go vet ./...

.PHONY: envtest
envtest: $(SETUP_ENVTEST) ## Provide envtest's kube-apiserver and etcd in bin/k8s: setup-envtest's download, else built from Go modules (skipped when present).
	@echo "KUBEBUILDER_ASSETS=$(KUBEBUILDER_ASSETS)"

# gotestsum runs go test ./... and ends with the counts ("DONE N tests, K skipped, F failures
# in Ts"); a failed test's output is printed when its package ends and again in the summary.
.PHONY: test
test: verify-generated vet test-alerts $(GOTESTSUM) $(SETUP_ENVTEST) $(PROMETHEUS) ## Run unit tests, envtest suites (real kube-apiserver), k6, the suites on real Apache CouchDB (COUCHDB_KIT), the dashboard's queries on real Prometheus, and the alert rules' tests.
	KUBEBUILDER_ASSETS="$(KUBEBUILDER_ASSETS)" K6="$(K6)" COUCHDB_KIT="$(COUCHDB_KIT)" COUCHDB_FAULT_PORT="$(COUCHDB_FAULT_PORT)" PROMETHEUS="$(PROMETHEUS)" \
		hack/with-couchdb.sh $(GOTESTSUM) --format pkgname-and-test-fails -- ./... -count=1 -timeout $(GO_TEST_TIMEOUT)

# The chart's copy of the rules is checked by charts/prometheusrule_test.go (go test).
.PHONY: test-alerts
test-alerts: $(PROMTOOL) ## Check the alert rules (config/prometheus) and run their promtool unit tests.
	$(PROMTOOL) check rules config/prometheus/couchbench-rules.yaml
	$(PROMTOOL) test rules config/prometheus/tests/*.yaml

.PHONY: bench
bench: $(SETUP_ENVTEST) ## Run the Go benchmarks (seeding vs the seed's naive loader on real Apache CouchDB, rate computation, the shift detector's false shifts over 2,000,000 runs per noise model, k6 vs wrk, 100 benchmarks on one manager, a standby manager's takeover, the metrics' series per benchmark and schedule); see docs/benchmarks.md.
	@command -v wrk >/dev/null 2>&1 || { apt-get update && apt-get install -y wrk; }
	KUBEBUILDER_ASSETS="$(KUBEBUILDER_ASSETS)" go test $$(go list ./internal/... | grep -v -e /seeding -e /loadtest) -run='^$$' -bench=. -count=1
	COUCHDB_KIT="$(COUCHDB_KIT)" hack/with-couchdb.sh --no-cluster go test ./internal/seeding -run='^$$' -bench=. -benchtime=3x -count=3
	K6="$(K6)" go test ./internal/loadtest -run='^$$' -bench=. -benchtime=1x -count=3
	KUBEBUILDER_ASSETS="$(KUBEBUILDER_ASSETS)" go test ./controllers -run='^$$' -bench=HundredBenchmarks -benchtime=1x -count=1
	KUBEBUILDER_ASSETS="$(KUBEBUILDER_ASSETS)" go test ./controllers -run='^$$' -bench=LeaderTakeover -benchtime=5x -count=1
	KUBEBUILDER_ASSETS="$(KUBEBUILDER_ASSETS)" go test ./controllers -run='^$$' -bench=MetricsCardinality -benchtime=1x -count=1

.PHONY: k6
k6: ## Build k6 (the version of the operator's k6 image) into bin/k6, for the reads of couchbench run (--k6 bin/k6).
	@hack/k6.sh $(LOCALBIN) >/dev/null

.PHONY: report-check
report-check: ## Render the HTML report of a realistic run and check it in headless Chromium (installs Debian's chromium if missing).
	@command -v chromium >/dev/null 2>&1 || { apt-get update && apt-get install -y chromium; }
	go test -tags browser -count=1 ./internal/report/

.PHONY: test-e2e
test-e2e: kind ## Run the e2e suite on a multi-node kind cluster (needs Docker; the node image is built when no registry answers).
	KIND=$(KIND) hack/e2e.sh

.PHONY: e2e-cluster
e2e-cluster: kind ## Make the e2e suite's kind cluster with every image it runs loaded, without running the suite (KUBECONFIG=bin/kind-e2e.kubeconfig).
	KIND=$(KIND) hack/e2e.sh cluster

.PHONY: test-e2e-clean
test-e2e-clean: $(KIND) ## Delete the e2e suite's kind cluster.
	$(KIND) delete cluster --name couchbench-e2e

.PHONY: lint
lint: $(GOLANGCI_LINT) ## Run golangci-lint.
	hack/heartbeat.sh golangci-lint linting $(GOLANGCI_LINT) run

##@ Build

.PHONY: build
build: generate ## Build the manager binary.
	go build -o $(LOCALBIN)/manager ./cmd/manager

.PHONY: run
run: manifests generate ## Run the manager against the cluster in ~/.kube/config.
	go run ./cmd/manager

##@ Demo

.PHONY: demo
demo: kind helm ## A kind cluster with the operator and config/samples/bench.yaml, ending in the results table (needs Docker).
	KIND=$(KIND) HELM=$(HELM) hack/kind-up.sh

.PHONY: demo-clean
demo-clean: $(KIND) ## Delete the demo's kind cluster.
	$(KIND) delete cluster --name couchbench

##@ Deployment

.PHONY: install
install: manifests $(KUSTOMIZE) ## Install the CRD into the cluster in ~/.kube/config.
	$(KUSTOMIZE) build config/crd | kubectl apply --server-side -f -

.PHONY: uninstall
uninstall: manifests $(KUSTOMIZE) ## Remove the CRD from the cluster.
	$(KUSTOMIZE) build config/crd | kubectl delete --ignore-not-found -f -

.PHONY: deploy
deploy: manifests $(KUSTOMIZE) ## Deploy the operator with kustomize (image IMG).
	cd config/manager && $(KUSTOMIZE) edit set image controller=$(IMG)
	$(KUSTOMIZE) build config/default | kubectl apply --server-side -f -

.PHONY: undeploy
undeploy: $(KUSTOMIZE) ## Remove the operator.
	$(KUSTOMIZE) build config/default | kubectl delete --ignore-not-found -f -

##@ Tools

# The pinned tools by name (make helm, make kind, ...): each is built into bin/ with its
# version in the file name, and bin/NAME links to it. The targets that run kind and helm ask
# for them by name, so that bin/kind and bin/helm are there for a user afterwards.
TOOLS := controller-gen kustomize golangci-lint gotestsum kind helm setup-envtest promtool prometheus
.PHONY: $(TOOLS)
controller-gen: $(CONTROLLER_GEN)
kustomize: $(KUSTOMIZE)
golangci-lint: $(GOLANGCI_LINT)
gotestsum: $(GOTESTSUM)
kind: $(KIND)
helm: $(HELM)
setup-envtest: $(SETUP_ENVTEST)
promtool: $(PROMTOOL)
prometheus: $(PROMETHEUS)
$(TOOLS):
	@ln -sf $(notdir $<) $(LOCALBIN)/$@ && echo "$(LOCALBIN)/$@ -> $(notdir $<)"

$(CONTROLLER_GEN): | $(LOCALBIN)
	$(call go-install-tool,$@,sigs.k8s.io/controller-tools/cmd/controller-gen,$(CONTROLLER_TOOLS_VERSION))

$(KUSTOMIZE): | $(LOCALBIN)
	$(call go-install-tool,$@,sigs.k8s.io/kustomize/kustomize/v5,$(KUSTOMIZE_VERSION))

$(KIND): | $(LOCALBIN)
	$(call go-install-tool,$@,sigs.k8s.io/kind,$(KIND_VERSION))

$(HELM): | $(LOCALBIN)
	$(call go-install-tool,$@,helm.sh/helm/v3/cmd/helm,$(HELM_VERSION))

$(SETUP_ENVTEST): | $(LOCALBIN)
	$(call go-install-tool,$@,sigs.k8s.io/controller-runtime/tools/setup-envtest,$(SETUP_ENVTEST_VERSION))

$(GOLANGCI_LINT): | $(LOCALBIN)
	$(call go-install-tool,$@,github.com/golangci/golangci-lint/v2/cmd/golangci-lint,$(GOLANGCI_LINT_VERSION))

$(PROMTOOL): | $(LOCALBIN)
	hack/promtool.sh $@ $(PROMTOOL_VERSION)

$(PROMETHEUS): | $(LOCALBIN)
	hack/promtool.sh $@ $(PROMTOOL_VERSION) prometheus

$(GOTESTSUM): | $(LOCALBIN)
	$(call go-install-tool,$@,gotest.tools/gotestsum,$(GOTESTSUM_VERSION))

# go-install-tool installs package $2 at version $3 as $1 (the version is in the file name,
# so changing a pin rebuilds the tool).
define go-install-tool
@set -e; pkg=$(2)@$(3); name=$$(basename $$(echo $(2) | sed 's,/v[0-9]*$$,,')); echo "installing $${pkg}"; \
tmp=$$(mktemp -d); GOBIN=$$tmp hack/heartbeat.sh "$$name" "building $(3)" go install $${pkg}; mv $$tmp/$$name $(1); rm -rf $$tmp
endef

# Torpor — agent runtime for devices that sleep.
# `make help` lists the targets.

GO        ?= go
FUZZTIME  ?= 30s
BENCHTIME ?= 1s
BIN       := bin
CMDS      := torpor-agent torpor-relay torporctl torpor-conformance

export CGO_ENABLED := 0

.PHONY: help build test race check check-setup demo cross bench fuzz fmt lint vet test-integration test-browser test-cluster test-faults test-updates test-tenants test-rollout

help: ## Show this help.
	@awk 'BEGIN{FS=":.*## "} /^[a-z-]+:.*## /{printf "  %-18s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

build: ## Build the four binaries for this machine into bin/.
	@mkdir -p $(BIN)
	$(GO) build -trimpath -buildvcs=auto -o $(BIN)/ ./cmd/torpor-relay ./cmd/torporctl ./cmd/torpor-conformance
	$(GO) build -tags "$$(cat scripts/agent-tags)" -trimpath -buildvcs=auto -o $(BIN)/ ./cmd/torpor-agent

test: ## Run the fast, hermetic unit tests (go test ./...).
	$(GO) test ./...

race: ## Run the unit tests under the race detector (cgo and a C compiler; about 6 min on 2 cores).
	CGO_ENABLED=1 $(GO) test -race -count=1 ./...

check: ## Run every test the project has (README's test command; CI runs this).
	./scripts/check.sh

check-setup: ## Install what `make check` needs (apt, npm, binfmt); root or sudo.
	./scripts/setup.sh

test-integration: ## Run the tests under test/ (crash, interop, QEMU, end to end); test/qemu beside the rest from the start.
	./scripts/integration.sh

test-browser: ## Run the fleet console in a real browser (Debian's chromium, chromedp); screenshots in TORPOR_ARTIFACTS (part of test-integration).
	TORPOR_REQUIRE_TOOLS=1 $(GO) test -tags integration -count=1 -timeout 10m ./test/browser/

test-faults: ## Run the fault suite alone: SIGKILL, damaged, lost, full, read-only and removed stores on both queue engines, the agent killed mid-hand-off (root; part of test-integration).
	TORPOR_REQUIRE_TOOLS=1 $(GO) test -tags integration -count=1 -timeout 10m ./test/faults/

test-tenants: ## Run the hosted relay's tenants tests alone: two owners' tenants on one relay and on 3 relays over a 3-node JetStream cluster, real binaries, each operator on the embedded MQTT broker and in the console in chromium, a tenant operator's rollout installed by a real agent of its tenant; screenshots in TORPOR_ARTIFACTS (part of test-integration).
	TORPOR_REQUIRE_TOOLS=1 $(GO) test -tags integration -count=1 -timeout 10m ./test/tenants/

test-updates: ## Run the agent-update tests alone: torporctl's key ceremony and publish, the relay's repository (bbolt, and two relays sharing one on JetStream), agents verifying a target over their link (whole and as a delta); A/B slots, trial boot, rollback of a build that exits or hangs, SIGKILLs during the switch; awake and sleeping agents installing a rollout's offer; the rauc hand-off with the real rauc (root); power cuts of an update and a rollback in the arm64 VM (part of test-integration).
	TORPOR_REQUIRE_TOOLS=1 $(GO) test -tags integration -count=1 -timeout 15m ./test/updates/
	TORPOR_REQUIRE_TOOLS=1 $(GO) test -tags integration -count=1 -timeout 15m -run TestUpdatePowerCut ./test/qemu/

test-cluster: ## Run the scale-out tests alone: 3 relays on a 3-node NATS JetStream cluster, the porcupine history checker (HISTORY_RUNS=N, HISTORY_SEED=seed; visualizations in TORPOR_ARTIFACTS), the rolling restart (part of test-integration).
	$(GO) test -tags integration -count=1 -timeout 10m ./test/cluster/

test-rollout: ## Run the update rollout tests alone: real relays (bbolt, and two on one JetStream server) and torporctl; pause on the failure rate, resume, abort, a relay restart (part of test-integration).
	$(GO) test -tags integration -count=1 -timeout 10m ./test/rollout/

demo: ## Run the demo on embedded defaults (relay, sleeping agents, a sender); TORPOR_DEMO_CLUSTER=1 on a fleet, TORPOR_DEMO_UPDATE=1 the story of an agent update rollout.
	./scripts/demo.sh

cross: ## Cross-build every binary for linux/arm GOARM=6,7 and linux/arm64; print sizes against the armv6 budgets (agent 12 MiB with the update client, torporctl 12 MiB).
	./scripts/cross.sh

.PHONY: packages
packages: ## Build the .deb packages (agent, relay, torporctl) into bin/packages/ with nfpm.
	./scripts/packages.sh

bench: ## Run the benchmarks (set BENCHTIME to change -benchtime).
	./scripts/bench.sh

fuzz: ## Run every fuzz target for FUZZTIME each (default 30s).
	FUZZTIME=$(FUZZTIME) ./scripts/fuzz.sh

fmt: ## Format the Go sources.
	gofmt -w $$(git ls-files '*.go')

vet: ## go vet every package, including the integration tests.
	$(GO) vet ./...
	$(GO) vet -tags integration ./test/...

lint: vet ## go vet plus staticcheck (a go.mod tool).
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt: files above need formatting"; exit 1; }
	$(GO) tool staticcheck ./...
	$(GO) tool staticcheck -tags integration ./test/...

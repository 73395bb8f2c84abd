# signd — HSM-backed remote signing appliance.
# `make help` lists the targets. Quick start: `make demo`, then `make test`.

GO        ?= go
BIN       ?= bin/signd
PKGS      ?= ./...
GOFLAGS   ?=
TESTFLAGS ?= -count=1 -timeout 15m
# staticcheck, pinned; fetched through the Go module proxy on first use.
STATICCHECK ?= $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2
FUZZTIME  ?= 30s
# What `signd version` reports: VERSION, the commit (-dirty with uncommitted
# changes) and the commit's date, so that two builds of one commit agree.
VERSION   ?= $(shell cat VERSION)
COMMIT    ?= $(shell git rev-parse HEAD 2>/dev/null)$(shell git diff --quiet HEAD 2>/dev/null || echo -dirty)
DATE      ?= $(shell git log -1 --format=%cI 2>/dev/null)
VERSIONPKG = github.com/signd/signd/cmd/signd/version
LDFLAGS   ?= -X $(VERSIONPKG).version=$(VERSION) -X $(VERSIONPKG).commit=$(COMMIT) -X $(VERSIONPKG).date=$(DATE)
# nfpm, pinned like staticcheck, builds the Debian package into DIST.
NFPM      ?= $(GO) run github.com/goreleaser/nfpm/v2/cmd/nfpm@v2.45.2
DIST      ?= dist
# The paths of the Debian package, written uncommented into its signd.yaml.
DEB_CONFIG ?= --set server.admin_socket=/run/signd/admin.sock --set store.path=/var/lib/signd/signd.db \
  --set oidc.pairwise_salt_file=/var/lib/signd/pairwise.salt --set pkcs11.pin_file=/etc/signd/pin \
  --set audit.checkpoint_dir=/var/lib/signd/checkpoints

.DEFAULT_GOAL := help

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} \
	  /^[a-zA-Z_-]+:.*?##/ { printf "  %-12s %s\n", $$1, $$2 } \
	  /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Build

.PHONY: build
build: ## Build bin/signd (cgo, dynamic glibc binary), stamped with VERSION, the commit and its date.
	CGO_ENABLED=1 $(GO) build $(GOFLAGS) -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/signd

.PHONY: deb
deb: build ## Build $(DIST)/signd_<VERSION>_amd64.deb (nfpm): the binary, man pages, /etc/signd/signd.yaml, the systemd unit, user and directories.
	rm -rf build/deb && mkdir -p build/deb $(DIST)
	cp $(BIN) build/deb/signd
	$(BIN) config example $(DEB_CONFIG) > build/deb/signd.yaml
	mkdir build/deb/man && $(BIN) man build/deb/man && gzip -9n build/deb/man/*.1
	VERSION=$(VERSION) $(NFPM) package --config packaging/nfpm.yaml --packager deb --target $(DIST)/

##@ Test

.PHONY: deps
deps: ## Install what is missing (SoftHSM2, OpenSSL, gcc, Chromium) with apt-get; root or sudo.
	bash scripts/install-deps.sh

.PHONY: test
test: deps ## Run every test once under -race, against a real SoftHSM2 token and real bbolt files.
	CGO_ENABLED=1 $(GO) test -race $(TESTFLAGS) $(PKGS)

# The tests that depend on the token, run on each token of test-tokens.
TOKEN_TESTS ?= ./hsm/
TOKEN_JOURNEY ?= TestTokenJourney

.PHONY: test-tokens
test-tokens: ## The hsm tests and the daemon journey on opencryptoki's soft token, then on tpm2-pkcs11 over swtpm (root).
	bash scripts/install-deps.sh --tokens --no-browser
	@failed=""; for tok in opencryptoki tpm2; do \
	  echo "== $$tok"; \
	  softhsm-test/with-token.sh $$tok sh -c 'CGO_ENABLED=1 $(GO) test -race $(TESTFLAGS) $(TOKEN_TESTS); s=$$?; \
	    CGO_ENABLED=1 $(GO) test -race $(TESTFLAGS) -run "$(TOKEN_JOURNEY)" ./cmd/signd/ && exit $$s' || failed="$$failed $$tok"; \
	done; \
	if [ -n "$$failed" ]; then echo "test-tokens failed on:$$failed"; exit 1; fi

.PHONY: test-race
test-race: ## Stress the concurrent parts (hsm pool and recovery, store) five times under -race.
	CGO_ENABLED=1 $(GO) test -race -count=5 -timeout 15m ./hsm/ ./store/... ./cmd/signd/...

.PHONY: crashtest
crashtest: ## kill -9 the daemon under signHash load CRASH_ROUNDS times (default 50); checks SAD, audit and store.
	CGO_ENABLED=1 SIGND_CRASH_ROUNDS=$(or $(CRASH_ROUNDS),50) $(GO) test -race -count=1 -timeout 30m -run 'TestCrashLoop' -v ./cmd/signd/

.PHONY: fuzz
fuzz: ## Run every fuzz target for FUZZTIME (default 30s) each, one after another; prints execs per target (docs/FUZZING.md).
	FUZZTIME=$(FUZZTIME) GO=$(GO) bash scripts/fuzz.sh

.PHONY: bench
bench: ## Benchmark HSM signing beside `openssl speed`, HTTP signHash vs raw HSM, then bench-rss and bench-token (docs/BENCHMARKS.md).
	bash scripts/bench.sh
	$(MAKE) bench-rss
	bash scripts/bench-token.sh

.PHONY: bench-rss
bench-rss: ## The daemon's RSS idle, under signHash load and after (BASELINE=path/to/old/signd compares; ROUNDS, LOAD_SECONDS).
	@w=$$(mktemp -d); trap 'rm -rf "$$w"' EXIT; bash scripts/bench-rss.sh "$$w" $(BASELINE)

.PHONY: bench-token
bench-token: ## Code→token exchanges/s of signd vs node-oidc-provider 9.x (needs node, npm; ROUNDS, C, N, LOAD_SECONDS).
	bash scripts/bench-token.sh

.PHONY: bench-ha
bench-ha: ## signHash and token throughput: 1 and 3 nodes on etcd vs 1 node on bbolt, store commit latency, commit counters and CPU split (ROUNDS, LOAD_SECONDS, C, N, BASE_SIGND, NET_DELAY).
	bash scripts/bench-ha.sh

.PHONY: lint
lint: ## gofmt, go vet and staticcheck.
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(STATICCHECK) $(PKGS)
	bash -n scripts/*.sh softhsm-test/*.sh .ci/run
	for f in packaging/deb/*; do sh -n "$$f" || exit 1; done

##@ Run

.PHONY: demo
demo: ## Install SoftHSM2 if missing, set up a token, demo user, client and key under ./var, start the daemon.
	bash scripts/demo.sh

.PHONY: demo-ha
demo-ha: ## Three nodes on a 3-member etcd cluster behind a round-robin front on :8440 (free ports when taken), demo enrolled once (var/ha; DETACH=1 returns).
	bash scripts/demo-ha.sh $(if $(DETACH),--detach)

.PHONY: demo-ha-stop
demo-ha-stop: ## Stop what `make demo-ha DETACH=1` left running.
	bash scripts/demo-ha.sh --stop

.PHONY: clean
clean: ## Remove build output (keeps ./var, the demo's token and store).
	rm -rf bin build $(DIST)
	$(GO) clean -testcache

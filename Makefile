# kubegcd — see README.md. `make help` lists the targets.

GO         ?= go
BIN        := bin
VERSION    ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS    := -X github.com/kubegcd/kubegcd/internal/app.Version=$(VERSION)
KUBE_BINS  := $(BIN)/etcd $(BIN)/kube-apiserver $(BIN)/kube-controller-manager
GOLANGCI   := github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0
TEST_FLAGS ?=

.PHONY: help build test test-unit test-e2e demo bench lint kube-bins systemd-analyze clean chromium web fuzz package man screenshots

help: ## show this help
	@awk 'BEGIN {FS = ":.*## "} /^[a-z-]+:.*## / {printf "  %-16s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

build: ## build bin/kubegcd
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/kubegcd ./cmd/kubegcd

# `make package`: the .deb and .rpm, from packaging/nfpm.yaml, into DIST.
# nfpm is a tool of packaging/'s own Go module, so that its dependencies stay
# out of kubegcd's. The package's version comes from VERSION: v1.2.3 → 1.2.3,
# v1.2.3-4-gabc1234 → 1.2.3+4.gabc1234, a pre-release's - → ~ (sorts before
# the release), untagged abc1234 → 0.0.0~git<commit date>.abc1234, -dirty →
# .dirty; the packaged binary prints it (kubegcd version).
DIST        := dist
GOARCH      ?= $(shell $(GO) env GOARCH)
PKG_VERSION  = $(shell v='$(VERSION)'; case "$$v" in \
	(v[0-9]*|[0-9]*.*) echo "$$v" | sed -E 's/^v//; s/-([0-9]+)-g([0-9a-f]+)/+\1.g\2/; s/-dirty$$/.dirty/; s/-/~/g' ;; \
	(*) echo "0.0.0~git$$(git log -1 --format=%cd --date=format:%Y%m%d 2>/dev/null).$$v" | sed 's/-/./g' ;; esac)
PKG_STAGE   := $(DIST)/stage
# The package's docs, made from the built binary's own help: the step to
# change for man pages. nfpm.yaml ships whatever lands in $(PKG_STAGE)/doc
# as /usr/share/doc/kubegcd/; man pages want an entry of their own there,
# to /usr/share/man/man1/ (and packaging/'s test its docPages).
PKG_DOCS     = for c in '' run migrate db cluster 'cluster add' 'cluster remove' get why tree cascade status release kubectl-plugin; do \
	$(PKG_STAGE)/kubegcd help $$c > $(PKG_STAGE)/doc/kubegcd$${c:+-$$(echo $$c | tr ' ' -)}.txt || exit 1; done

package: ## build the .deb and .rpm into dist/ (nfpm, from packaging/)
	rm -rf $(PKG_STAGE) && mkdir -p $(PKG_STAGE)/doc
	CGO_ENABLED=0 GOARCH=$(GOARCH) $(MAKE) --no-print-directory build BIN=$(PKG_STAGE) VERSION=$(PKG_VERSION)
	# The units as deploy/ has them (and tests them), with the binary where
	# the package puts it.
	for u in kubegcd.service kubegcd@.service; do \
		sed 's|/usr/local/bin/kubegcd|/usr/bin/kubegcd|g' deploy/$$u > $(PKG_STAGE)/$$u && \
		grep -q '^ExecStart=/usr/bin/kubegcd ' $(PKG_STAGE)/$$u || exit 1; done
	$(PKG_DOCS)
	cd packaging && for p in deb rpm; do \
		STAGE=$(abspath $(PKG_STAGE)) PKG_VERSION='$(PKG_VERSION)' GOARCH=$(GOARCH) \
		$(GO) tool nfpm package -f nfpm.yaml -p $$p -t $(abspath $(DIST)) || exit 1; done

# The man pages come from the commands and their flags, as --help does.
man: ## write the man pages (section 1) into bin/man/
	rm -rf $(BIN)/man
	$(GO) run ./hack/gendocs --dir $(BIN)/man

# docs/flags.md, docs/cli.md, the table of docs/metrics.md, the reference of docs/api.md and
# docs/openapi.json come from the commands, their flags, the metrics'
# descriptors, and the API's table of operations (api.Operations) and its
# types with their doc comments. The binary embeds docs/openapi.json and
# serves it as GET /openapi/v3, as Kubernetes' openapi-gen output is
# generated and compiled in; hack/gendocs's test fails when the committed
# copies differ. (docs/ is a directory: phony.)
.PHONY: docs
docs: ## write docs/flags.md, docs/cli.md, the metrics table of docs/metrics.md, the reference of docs/api.md and docs/openapi.json from the code
	$(GO) run ./hack/gendocs --markdown docs

kube-bins: $(KUBE_BINS) ## build etcd, kube-apiserver and kube-controller-manager for tests (first time ≈ 5 min)

# buildprogress condenses `go build -v` into a count of the packages
# compiled: one updating line on a terminal, a line every 100 elsewhere.
# It is defined before the rules that name it as a prerequisite: make
# expands a prerequisite when it reads the rule.
PROGRESS := $(BIN)/buildprogress
$(PROGRESS): hack/buildprogress/main.go
	@mkdir -p $(BIN)
	@$(GO) build -o $@ ./hack/buildprogress

# The control plane comes from Go modules pinned in hack/kube/go.mod, built
# once; a change to that go.mod rebuilds them. Each build counts the
# packages it compiles as it goes (hack/buildprogress).
$(BIN)/etcd: hack/kube/go.mod hack/kube/go.sum | $(PROGRESS)
	@cd hack/kube && $(abspath $(PROGRESS)) etcd -- $(GO) build -v -o ../../$@ go.etcd.io/etcd/server/v3
$(BIN)/kube-apiserver: hack/kube/go.mod hack/kube/go.sum | $(PROGRESS)
	@cd hack/kube && $(abspath $(PROGRESS)) "kube-apiserver (the longest step the first time)" -- \
		$(GO) build -v -o ../../$@ k8s.io/kubernetes/cmd/kube-apiserver
$(BIN)/kube-controller-manager: hack/kube/go.mod hack/kube/go.sum | $(PROGRESS)
	@cd hack/kube && $(abspath $(PROGRESS)) kube-controller-manager -- \
		$(GO) build -v -o ../../$@ k8s.io/kubernetes/cmd/kube-controller-manager

# kwok simulates the nodes and pods of hack/bench's scale benchmark against
# the real kube-apiserver. It comes from hack/kwok/go.mod, a module of its
# own so that its dependencies stay out of hack/kube's; its stage files
# (nodes Ready at once and renewing their Leases, pods run and finish) ship
# in the same module and are copied, from the same pinned version, beside
# it into $(BIN)/kwok-stages/.
KWOK_STAGES := node/fast node/heartbeat-with-lease pod/fast
$(BIN)/kwok: hack/kwok/go.mod hack/kwok/go.sum
	cd hack/kwok && $(GO) build -o $(abspath $@) sigs.k8s.io/kwok/cmd/kwok
	rm -rf $(BIN)/kwok-stages && mkdir -p $(BIN)/kwok-stages
	d=$$(cd hack/kwok && $(GO) list -m -f '{{.Dir}}' sigs.k8s.io/kwok)/kustomize/stage && \
	for s in $(KWOK_STAGES); do for f in $$d/$$s/*.yaml; do \
		[ "$$(basename $$f)" = kustomization.yaml ] || install -m 0644 $$f $(BIN)/kwok-stages/ || exit 1; \
	done; done

# deploy/'s test checks the unit with systemd-analyze (Debian's systemd
# package): installed when missing and root, else one line says how.
systemd-analyze: ## install systemd-analyze (package systemd) for the unit's test, when missing
	@command -v systemd-analyze >/dev/null 2>&1 || \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends systemd; \
	else echo "make: systemd-analyze is missing: install the systemd package (sudo apt-get install systemd) and run make test again" >&2; exit 1; fi

# The race detector watches kubegcd's code, not SQLite: modernc.org's
# SQLite is C translated to Go, one connection per goroutine at a time, and
# instrumenting it made every test that writes a database four times slower
# (internal/db: 196 s against 45). Go code calling into it is still watched.
RACE = -race -gcflags=modernc.org/sqlite/lib=-race=false -gcflags=modernc.org/libc/...=-race=false \
	-gcflags=modernc.org/memory=-race=false

test: build kube-bins $(BIN)/kwok systemd-analyze chromium ## run every test, end-to-end tests against a real kube-apiserver included
	$(GO) vet ./...
	# Every package, the end-to-end suites included, under the race
	# detector.
	$(GO) test $(RACE) -count=1 -timeout 45m $(TEST_FLAGS) ./...
	cd deploy && $(GO) vet ./... && $(GO) test -count=1 ./...
	# packaging/'s test runs make package itself, into a directory of its own.
	cd packaging && $(GO) vet ./... && $(GO) test -count=1 ./...
	$(MAKE) --no-print-directory fuzz FUZZTIME=$(TEST_FUZZTIME)

# The quick tier: every package outside test/, with -short, which skips
# the few tests there that run a control plane. It needs Go alone: no bin/,
# no network, no browser (about a minute on two cores with warm caches).
UNIT_PKGS = $$($(GO) list ./... | grep -v '/test/')

test-unit: ## run the tests that need Go alone (the quick loop; skips those needing a control plane)
	$(GO) vet ./...
	$(GO) test -short -count=1 $(TEST_FLAGS) $(UNIT_PKGS)

# The suites under test/: kubegcd as a daemon, and its controllers one by
# one, against a real kube-apiserver and etcd; the browser tests included.
test-e2e: build kube-bins $(BIN)/kwok chromium ## run the end-to-end and integration suites under test/ (bin/ and Chromium)
	$(GO) test $(RACE) -count=1 -timeout 45m $(TEST_FLAGS) ./test/...

# Fuzz targets, as package:Target; `make test` runs each for TEST_FUZZTIME,
# `make fuzz FUZZTIME=10m` for as long as asked. TEST_FUZZTIME counts
# inputs, not seconds: up to Go 1.26, a fuzz run that ends on a duration
# may fail with "context deadline exceeded" and no failing input, a race in
# Go's coordinator (golang/go#75804). A failing input is kept
# under the package's testdata/fuzz/, where the plain tests replay it.
FUZZ_TARGETS  := internal/http:FuzzQueryParameters internal/http:FuzzRequestMetrics internal/http:FuzzDOTQuote internal/gcrules:FuzzClassify \
	internal/app:FuzzConfigFile internal/cli:FuzzParseObjectRef internal/cli:FuzzHumanOutputHasNoControl internal/cmdline:FuzzPrintable \
	internal/rules:FuzzSchedule
FUZZTIME      ?= 1m
TEST_FUZZTIME ?= 1000x

fuzz: ## run every fuzz target for FUZZTIME (default 1m) each
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t#*:}; \
		echo "fuzz $$name ($$pkg) for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) ./$$pkg; \
	done

# The browser tests (test/e2eui) drive Debian's Chromium headless.
chromium: ## install Debian's chromium for the browser tests when it is missing (root only)
	@if [ ! -x /usr/bin/chromium ]; then \
		if [ "$$(id -u)" = 0 ]; then \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
		else \
			echo "the browser tests need Chromium: run 'sudo apt-get install chromium' (Debian) and make test again" >&2; exit 1; \
		fi; \
	fi

# The pictures of the README and docs/ui.md come from the browser tests'
# screenshots of the overview, an object page, the Rules page, an object
# with references and a deleted object's Undo, at 1280×900.
SHOTS := $(BIN)/screenshots
screenshots: build kube-bins chromium ## refresh the UI screenshots in docs/images/ from the browser tests
	rm -rf $(SHOTS) && mkdir -p $(SHOTS) docs/images
	KUBEGCD_SCREENSHOTS=$(abspath $(SHOTS)) $(GO) test -count=1 -run '^(TestSearchFindsObjectByName|TestObjectPageDrawsTheGraph|TestRulesPageAndReferences|TestRestoreFromTheDeletedObjectsPage)$$' ./test/e2eui
	for p in overview object rules object-references restore; do install -m 0644 $(SHOTS)/$$p.png docs/images/$$p.png || exit 1; done

# The UI's graph library comes from npm (web/package-lock.json); its built
# files are copied into web/vendor/ and committed, so that go build alone
# embeds them and no build or test needs npm.
web: ## reinstall the UI's JavaScript libraries from web/package-lock.json into web/vendor/
	cd web && npm ci --no-audit --no-fund
	rm -rf web/vendor && mkdir -p web/vendor
	# dagre.min.js bundles graphlib and lodash: their licences go with it.
	for p in cytoscape dagre graphlib lodash; do \
		mkdir -p web/vendor/$$p && cp web/node_modules/$$p/LICENSE web/vendor/$$p/; \
	done
	cp web/node_modules/cytoscape/dist/cytoscape.min.js web/vendor/cytoscape/
	cp web/node_modules/dagre/dist/dagre.min.js web/vendor/dagre/

# `make demo` builds only what the demo runs (etcd, kube-apiserver, kubegcd
# and the demo itself), counting the packages each build compiles, and runs
# the built demo: `go run` exits 1 on Ctrl-C, which make would report as an
# error although the demo stopped cleanly. The first run's module downloads
# go to a log, shown only when they fail.
demo: $(BIN)/.demo-modules $(PROGRESS) $(BIN)/etcd $(BIN)/kube-apiserver ## start a local control plane, seed it, run kubegcd against it and print the UI's URL
	@$(PROGRESS) kubegcd -- $(GO) build -v -ldflags '$(LDFLAGS)' -o $(BIN)/kubegcd ./cmd/kubegcd
	@$(PROGRESS) "the demo" -- $(GO) build -v -o $(BIN)/kubegcd-demo ./hack/demo
	@exec $(BIN)/kubegcd-demo

# Loading the packages the demo builds downloads exactly the modules they
# need, once for each change of the go.sum files.
$(BIN)/.demo-modules: go.sum hack/kube/go.sum
	@echo "downloading Go modules (first run only)…"
	@mkdir -p $(BIN)
	@log=$(BIN)/demo-modules.log; \
	{ $(GO) list -deps ./cmd/kubegcd ./hack/demo && \
	  cd hack/kube && $(GO) list -deps go.etcd.io/etcd/server/v3 k8s.io/kubernetes/cmd/kube-apiserver; } >/dev/null 2>$$log || \
	{ tail -n 20 $$log >&2; echo "make: downloading Go modules failed; the whole output is in $$log" >&2; exit 1; }
	@touch $@

# BENCH_FLAGS: e.g. --run scale (see go run ./hack/bench --help).
BENCH_FLAGS ?=
bench: build kube-bins $(BIN)/kwok ## run the benchmarks (BENCH_FLAGS='--run scale' for the kwok cluster) and print their figures
	$(GO) run ./hack/bench $(BENCH_FLAGS)

lint: ## go vet and golangci-lint
	$(GO) vet ./...
	$(GO) run $(GOLANGCI) run ./...

clean: ## remove built binaries and packages
	rm -rf $(BIN) $(DIST)

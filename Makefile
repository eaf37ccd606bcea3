# leasefence build and test entry points.
#
#   make deps   install what a fresh Debian machine lacks (root), or say what is missing
#   make test   deps, go vet, every test against real PostgreSQL, coverage gates, alert rules
#   make demo   deps, then the leasectl demo on a throwaway PostgreSQL
#   make lint   gofmt, go vet, staticcheck and the go.mod tidy check (make test runs it)
#   make bench  benchmarks on a durable throwaway PostgreSQL; writes bench/RESULTS.md and
#               bench/results.json (BENCH_TIME=3s is the short form, about 4 minutes on a
#               2-core machine, 4.5 when it is loaded; its heartbeat holds 30 s, not a minute)
#   make soak   the fault campaign for OPS checked operations with SEED (docs/reliability.md);
#               ends with "soak: N operations checked, K fault kinds, V violations, seed S"
#
# Tests run through gotestsum (a Go tool dependency pinned in go.mod, run
# with go tool, so a fresh clone installs nothing by hand). make test ends
# with gotestsum's summary of every run, whose last line is
# "DONE N tests[, N skipped][, N failures] in ..."; the coverage figures come
# just before it.
#
# bench/ is a module of its own (github.com/mightyetl/leasefence/bench): the
# benchmarks (make bench) and the reliability campaign (bench/campaign, make
# soak), tools that a user of the main module neither fetches nor lists.
# go.work joins it to the main module in this checkout, so the commands
# here run from the repository root; go list ./... at the root still lists
# the main module alone. bench may import the main module's internal
# packages (the throwaway PostgreSQL of internal/pglocal and
# internal/testdb): Go's internal rule goes by import path.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := test

MODULE       := github.com/mightyetl/leasefence
COVERAGE_DIR := coverage
TOOLS_DIR    := bin
GO_TEST_FLAGS := -race -count=1 -timeout 12m
GOTESTSUM    := go tool gotestsum --format pkgname-and-test-fails --format-icons text
FAILED       := $(COVERAGE_DIR)/failed-steps

# Statement coverage gates, in percent. goclient is measured over
# goclient/... by its own tests, cmd/leasectl over the leasectl binary its
# tests run (cmd/leasectl and internal/cli, the CLI it runs), and each of GATED_PACKAGES by its own tests alone (what the CLI's
# tests reach of them does not count): the figures they reached when the
# gates were set were audit 94.3, evidence 95.2, internal/demo 94.9 to 95.3,
# textfmt 100 (as internal/textfmt, before it became public) and controls 100.
GOCLIENT_MIN := 100
LEASECTL_MIN := 95
AUDIT_MIN    := 94
EVIDENCE_MIN := 95
DEMO_MIN     := 94
TEXTFMT_MIN  := 100
CONTROLS_MIN := 100
GATED_PACKAGES := ./audit ./controls ./evidence ./internal/demo ./textfmt

# What make deps checks and installs (Debian package names).
# chromium renders the demo's HTML timeline in its test; faketime moves the
# database clock in the reliability campaign (bench/campaign); pgaudit and
# pg_cron are loaded by the transport tests (internal/transport: the tested
# pgaudit configuration, the retention purge scheduled in pg_cron);
# openssh-client's ssh-keygen makes the test keys and verifies signed
# evidence exports as an auditor would (internal/sshsig, cmd/leasectl); a
# worker behind pgbouncer in transaction and session pooling is goclient's
# TestWorkerBehindPgBouncer; patroni and etcd-server run the two-member
# loopback cluster of the high-availability test (internal/hatest,
# deploy/patroni; Debian 12 ships Patroni 3.0 and etcd 3.4, whose v2 API is
# off, so Patroni talks to it through its etcd3 section; that section
# imports python3-etcd, which patroni depends on only as one of several
# alternatives, so it is named here).
DEB_PACKAGES := postgresql-15 postgresql-15-pgtap libtap-parser-sourcehandler-pgtap-perl \
                postgresql-15-plpgsql-check postgresql-15-pgaudit postgresql-15-cron \
                prometheus chromium faketime openssh-client pgbouncer patroni etcd-server python3-etcd

.PHONY: deps test demo lint tools clean soak ha-soak bench

# Measured time of each comparison of make bench (ours and its baseline together).
BENCH_TIME ?= 10s

deps:
	@if ! command -v dpkg-query >/dev/null 2>&1; then \
	  echo "make deps: this is not a Debian-based machine; install PostgreSQL 15 with pgTAP, pg_prove," \
	       "plpgsql_check, promtool and pgbouncer yourself (Debian packages: $(DEB_PACKAGES))" >&2; \
	  exit 1; \
	fi
	@missing=""; \
	for p in $(DEB_PACKAGES); do \
	  dpkg-query -W -f='$${Status}\n' "$$p" 2>/dev/null | grep -qx 'install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -z "$$missing" ]; then \
	  echo "make deps: Debian packages present ($(DEB_PACKAGES))"; \
	elif [ "$$(id -u)" -ne 0 ]; then \
	  echo "make deps: missing Debian packages:$$missing" >&2; \
	  echo "make deps: install them as root: apt-get update && apt-get install -y --no-install-recommends$$missing" >&2; \
	  exit 1; \
	else \
	  echo "make deps: installing$$missing"; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get update -qq; \
	  apt-get install -y -qq --no-install-recommends $$missing; \
	fi
	@for tool in pg_prove promtool chromium ssh-keygen patroni patronictl etcd /usr/lib/postgresql/15/bin/postgres /usr/sbin/pgbouncer; do \
	  command -v "$$tool" >/dev/null 2>&1 || { echo "make deps: $$tool is still missing after the install" >&2; exit 1; }; \
	done
	@for lib in pgaudit pg_cron; do \
	  test -f "/usr/lib/postgresql/15/lib/$$lib.so" || { echo "make deps: the PostgreSQL library $$lib is still missing after the install" >&2; exit 1; }; \
	done
	@# Each module by its own go.mod (in the go.work workspace go mod download
	@# would fetch every module of the joined graph, most never built).
	GOWORK=off go mod download
	cd bench && GOWORK=off go mod download

# The small Go program make test drives (built once, into bin/).
tools:
	@mkdir -p $(TOOLS_DIR)
	go build -o $(TOOLS_DIR)/covergate ./scripts/covergate

test: deps tools
	@rm -rf $(COVERAGE_DIR) && mkdir -p $(COVERAGE_DIR)
	$(MAKE) --no-print-directory lint || echo "make lint" >>$(FAILED)
	@# Each step below runs even when an earlier one failed, so one run shows
	@# every problem; a failed step is noted in $(FAILED) and fails make at the end.
	@# Every package except goclient and the gated ones, and the bench
	@# module's (./bench/...: the benchmarks' tests, never the benchmarks
	@# themselves, and the reliability campaign's), in one go test through
	@# go.work. cmd/leasectl's tests build the binary with -cover, run it
	@# with GOCOVERDIR, and write the merged profile to LEASECTL_COVERPROFILE
	@# (the hook for the leasectl gate below).
	LEASECTL_COVERPROFILE=$(CURDIR)/$(COVERAGE_DIR)/leasectl.out \
	LEASEFENCE_SQL_COVERAGE_REPORT=$(CURDIR)/$(COVERAGE_DIR)/sql.txt \
	  $(GOTESTSUM) --jsonfile $(COVERAGE_DIR)/tests-all.json -- $(GO_TEST_FLAGS) \
	  $$(go list ./... | grep -v '^$(MODULE)/goclient\(/\|$$\)' | grep -vxF "$$(go list $(GATED_PACKAGES))") ./bench/... \
	  || echo "go test of every package but goclient and the gated ones, and of ./bench/..." >>$(FAILED)
	@# The gated packages, each measured by its own tests.
	$(GOTESTSUM) --jsonfile $(COVERAGE_DIR)/tests-gated.json -- $(GO_TEST_FLAGS) \
	  -coverprofile=$(COVERAGE_DIR)/packages.out $(GATED_PACKAGES) \
	  || echo "go test of $(GATED_PACKAGES)" >>$(FAILED)
	@# goclient on its own, measured over all of goclient/... by its own tests.
	@if [ -d goclient ]; then \
	  echo "go test $(GO_TEST_FLAGS) -coverpkg=./goclient/... -coverprofile=$(COVERAGE_DIR)/goclient.out ./goclient/..."; \
	  $(GOTESTSUM) --jsonfile $(COVERAGE_DIR)/tests-goclient.json -- $(GO_TEST_FLAGS) \
	    -coverpkg=./goclient/... -coverprofile=$(COVERAGE_DIR)/goclient.out ./goclient/... \
	    || echo "go test of goclient" >>$(FAILED); \
	fi
	@if compgen -G 'deploy/prometheus/*.yml' >/dev/null; then \
	  rules=$$(grep -L '^rule_files:' deploy/prometheus/*.yml || true); \
	  tests=$$(grep -l '^rule_files:' deploy/prometheus/*.yml || true); \
	  if [ -n "$$rules" ]; then \
	    echo "promtool check rules" $$rules; \
	    promtool check rules $$rules || echo "promtool check rules" >>$(FAILED); \
	  fi; \
	  if [ -n "$$tests" ]; then \
	    echo "promtool test rules" $$tests; \
	    promtool test rules $$tests || echo "promtool test rules" >>$(FAILED); \
	  fi; \
	fi
	@echo "=== coverage"
	@if [ -d goclient ]; then \
	  $(TOOLS_DIR)/covergate -profile $(COVERAGE_DIR)/goclient.out -name goclient -min $(GOCLIENT_MIN) \
	    -prefix $(MODULE)/goclient || echo "goclient coverage gate" >>$(FAILED); \
	fi
	@if [ -d cmd/leasectl ]; then \
	  if [ -s $(COVERAGE_DIR)/leasectl.out ]; then \
	    $(TOOLS_DIR)/covergate -profile $(COVERAGE_DIR)/leasectl.out -name cmd/leasectl -min $(LEASECTL_MIN) \
	      -prefix $(MODULE)/cmd/leasectl -prefix $(MODULE)/internal/cli || echo "cmd/leasectl coverage gate" >>$(FAILED); \
	  else \
	    echo "coverage cmd/leasectl: FAIL, its tests wrote no profile to LEASECTL_COVERPROFILE"; \
	    echo "cmd/leasectl coverage gate (no profile)" >>$(FAILED); \
	  fi; \
	fi
	@for gate in audit:$(AUDIT_MIN) evidence:$(EVIDENCE_MIN) internal/demo:$(DEMO_MIN) textfmt:$(TEXTFMT_MIN) controls:$(CONTROLS_MIN); do \
	  pkg=$${gate%:*}; \
	  $(TOOLS_DIR)/covergate -profile $(COVERAGE_DIR)/packages.out -name $$pkg -min $${gate#*:} \
	    -prefix $(MODULE)/$$pkg || echo "$$pkg coverage gate" >>$(FAILED); \
	done
	@if [ -s $(COVERAGE_DIR)/sql.txt ]; then cat $(COVERAGE_DIR)/sql.txt; \
	else echo "SQL coverage: no report (TestSQLCoverageAndLint did not get that far)"; fi
	@if [ -s $(FAILED) ]; then echo "=== make test failed in:"; sed 's/^/  /' $(FAILED); fi
	@echo "=== every test of this run"
	@$(GOTESTSUM) --format pkgname --hide-summary output --raw-command -- cat $(COVERAGE_DIR)/tests-*.json \
	  || test -s $(FAILED) || echo "test summary" >>$(FAILED)
	@test ! -s $(FAILED)

demo: deps
	go run ./cmd/leasectl demo

# Starts its own PostgreSQL (fsync, synchronous_commit and full_page_writes
# on), warms up, runs each comparison in alternating rounds and writes the
# report; see bench/doc.go. make test builds and lints the bench code and
# runs its tests (the ladders' functions on a test database), never the
# benchmarks themselves.
bench: deps
	go run ./bench/cmd/leasebench -time $(BENCH_TIME) -out bench

# gofmt, go vet, staticcheck (pinned in go.mod as a tool) and a go.mod and
# go.sum that go mod tidy would not change, for the main module and the
# bench module alike. Zero findings, or make lint fails.
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	go vet ./... ./bench/...
	go tool staticcheck ./... ./bench/...
	@go mod tidy -diff || { echo "make lint: go.mod or go.sum is not tidy: run go mod tidy" >&2; exit 1; }
	@cd bench && { go mod tidy -diff || { echo "make lint: bench/go.mod or bench/go.sum is not tidy: run go mod tidy in bench" >&2; exit 1; }; }
	@# The River peer of make bench is a module of its own (the main module never depends on River),
	@# outside go.work (its newer dependencies would raise the versions the main module's tests run with).
	cd bench/peers/river && GOWORK=off go vet ./...
	@cd bench/peers/river && { GOWORK=off go mod tidy -diff || { echo "make lint: bench/peers/river/go.mod is not tidy" >&2; exit 1; }; }

# The reliability campaign (bench/campaign), as long as asked; exits 1 on
# any violation.
OPS  ?= 5000
SEED ?= 1
soak:
	@go run ./bench/campaign/soak -ops $(OPS) -seed $(SEED)

# The high-availability soak (internal/hatest, build tag hasoak; issue 36):
# for each mode of HA_SOAK_MODES a fresh etcd and two-member Patroni cluster
# on loopback through HA_SOAK_EVENTS events, switchovers and crash failovers
# (kill -9 of the leader's postmaster) alternating, a TxHandler worker
# throughout, and every check of the test make test runs after them (every
# job once, no stale write, generations increasing, no attempt charged, each
# promotion recorded once). Prints one line of figures per mode; exits 1 on
# any violation. Two modes of 20 events (20 crash failovers in all) take
# about 8 minutes.
HA_SOAK_EVENTS ?= 20
HA_SOAK_MODES  ?= synchronous,asynchronous
ha-soak: deps
	@mkdir -p $(COVERAGE_DIR)
	@rc=0; HA_SOAK_EVENTS=$(HA_SOAK_EVENTS) HA_SOAK_MODES=$(HA_SOAK_MODES) go test -tags hasoak -count=1 -timeout 120m \
	  -run TestHASoak -v ./internal/hatest >$(COVERAGE_DIR)/ha-soak.log 2>&1 || rc=$$?; \
	grep -E '^(--- |FAIL|ok)|soak: |Error:|Messages:|\[build failed\]|^[a-z/_.]+\.go:[0-9]+' $(COVERAGE_DIR)/ha-soak.log || true; \
	echo "make ha-soak: full log in $(COVERAGE_DIR)/ha-soak.log"; exit $$rc

clean:
	rm -rf $(COVERAGE_DIR) $(TOOLS_DIR)

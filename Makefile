# zklock: `make test` is the test command (CI runs it through .ci/run).
# It installs or starts everything it needs: Debian's ZooKeeper for the
# root module, and a locally built ZooKeeper image for the integration
# module when a Docker engine answers.

GO      ?= go
RACE    ?= -race
PKG     := github.com/zklock/zklock
COVER   := coverage.out
MINCOV  ?= 85

.PHONY: test deps vet unit adapters chaos-short integration example demo cover fuzz fuzz-short bench chaos clean

test: deps vet unit adapters fuzz-short chaos-short integration example

# The observability adapters: modules of their own (their own go.mod), so
# that the library's users inherit neither OpenTelemetry nor Prometheus.
ADAPTERS := zklockprom zklockotel
# Modules of their own besides integration_test: the adapters, and the
# metrics example, which uses zklockprom.
MODULES := $(ADAPTERS) examples/metrics

deps:
	@./internal/tools/ensure-deps.sh

vet:
	$(GO) vet ./...
	cd integration_test && $(GO) vet ./...
	@set -e; for m in $(MODULES); do echo "cd $$m && $(GO) vet ./..."; (cd $$m && $(GO) vet ./...); done
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { echo "gofmt needed:"; gofmt -l .; exit 1; }
	$(GO) run ./internal/tools/doccheck .
	$(GO) run ./internal/tools/doccheck ./zktest
	@set -e; for m in $(ADAPTERS); do $(GO) run ./internal/tools/doccheck ./$$m; done

# Root module: unit tests and integration tests against a real ZooKeeper,
# with the race detector, goroutine-leak checks and root-package coverage.
# TestFaultTeeth, among them, rebuilds the root package's tests with the
# broken variants of internal/mutants (an -overlay of the source, which
# has no seam for them) and requires the election's and the solo path's
# fault tests (two of them on 3-node ensembles of their own, with a
# follower that lags) to fail on broken variants of the library (about a
# minute).
unit:
	$(GO) test $(RACE) -count=1 -timeout 15m -skip 'TestChaosShort|TestChaosTeeth' -covermode=atomic -coverpkg=$(PKG) -coverprofile=$(COVER) ./...
	@$(GO) tool cover -func=$(COVER) | tail -1
	@$(GO) tool cover -func=$(COVER) | awk '/^total:/ { sub("%","",$$3); if ($$3+0 < $(MINCOV)) { print "coverage " $$3 "% is below $(MINCOV)%"; exit 1 } }'

# The adapter modules' tests: each against its library's in-memory reader
# or registry, fed by a real ZooKeeper's lock events; and the metrics
# example's.
adapters: deps
	@set -e; for m in $(MODULES); do echo "cd $$m && $(GO) test $(RACE) -count=1 ./..."; (cd $$m && $(GO) test $(RACE) -count=1 -timeout 5m ./...); done

# Integration module: the testcontainers backend (image built locally from
# Debian's packages) and the multi-node scenarios.
integration:
	cd integration_test && $(GO) test $(RACE) -count=1 -timeout 30m ./...

# Every example under examples/ runs, as a command, and checks its own
# property (its exit status). Their tests (examples/*/main_test.go) and the
# root package's Example functions also run in `make unit`, under ./...
# The examples take their servers from ZK_SERVERS (their -zk flag's
# default): withzk (internal/tools/withzk) runs them with the ensemble
# ZK_SERVERS names, or else with a ZooKeeper server it starts for them and
# stops when they end, however they end (Ctrl-C included).
WITHZK   := $(GO) run ./internal/tools/withzk
EXAMPLES := mutex rwlock semaphore multilock revoke fencing election
example: deps
	@$(WITHZK) sh -ec 'for e in $(EXAMPLES); do echo "== go run ./examples/$$e"; $(GO) run ./examples/$$e; done; \
		echo "== cd examples/metrics && go run ."; cd examples/metrics && $(GO) run .'

# The README's first command: the flash-sale oversell scenario, without a
# lock and with zklock's Mutex and Semaphore, on a ZooKeeper of its own
# unless ZK_SERVERS is set. DEMOFLAGS='-buyers 3000' changes its size.
demo: deps
	@$(WITHZK) $(GO) run ./examples/seckill $(DEMOFLAGS)

# Benchmarks (not part of `make test`): BENCHMARKS.md's workloads for zklock,
# Apache Curator and zk.Lock against a ZooKeeper of their own (Java's
# defaults, -Xmx1000m), warmed with every library first, ROUNDS rounds
# with the libraries' order rotated, medians and spreads; tables on
# stdout, JSON in bench-results.json. See internal/bench/README.md.
#   make bench                  both regimes, reference sizes, data on disk
#   make bench TMPFS=1          data on tmpfs (/dev/shm): the targets' setting
#   make bench QUICK=1          a smoke check, every size shrunk, 2 rounds: 2-3 minutes
#   make bench REGIME=latency   loopback, latency or both (the default)
#   make bench DELAY=2ms        the latency regime's delay each way (1ms)
#   make bench ROUNDS=5         rounds (3; QUICK: 2)
#   make bench BENCHFLAGS='-workloads handoff -libs zklock,curator -server-jvm test'
#   make bench BENCHFLAGS='-workloads failover'   leader failover only: Election against LeaderLatch
#   make bench BENCHFLAGS='-workloads manylocks'  many locks held at once by one session (N = 1000, 10000, 100000)
REGIME ?= both
ROUNDS ?=
DELAY  ?= 1ms
bench: deps
	$(GO) run ./internal/bench $(if $(filter 1 yes true,$(TMPFS)),-tmpfs) $(if $(filter 1 yes true,$(QUICK)),-quick) -regime $(REGIME) $(if $(ROUNDS),-rounds $(ROUNDS)) -delay $(DELAY) $(BENCHFLAGS)

# The chaos suite (internal/chaos, see its package doc): 16 sessions, each
# behind its own fault proxy, contend on a Mutex, a ReadWriteLock and a
# Semaphore of a 3-node ensemble, four of them on an Election instead of
# the Mutex, two also on a solo Mutex, mostly alone, whose empty parent is
# deleted again and again, while servers are killed and partitioned and
# sessions paused and cut, at random and aimed at current holders and
# leaders (some of which hold for one to two session timeouts) and at the
# next in the Mutex's or the Election's line; a checker then looks for two sections
# that believed they held (or led) at once, losses told too late, tokens
# going back, stale writes accepted, orphan nodes and leaked goroutines,
# and Porcupine, a second judge, checks the recorded history for
# linearizability per lock and resource (its HTML visualisation of a
# refused partition goes to the current directory).
# The report says what each kind of fault hit: a holder, a waiter or an
# idle session, and how often faults struck each kind of holder, leaders
# included. Then 2000 waiters queue over 50 sessions and the leader is
# killed. Partitions need root (network namespaces).
#   make chaos                        ten minutes, a seed from the clock
#   make chaos SEED=42 DURATION=30m   replays a schedule
SEED     ?= 0
DURATION ?= 10m
chaos: deps
	$(GO) run ./internal/chaos -seed $(SEED) -duration $(DURATION) $(CHAOSFLAGS)

# The chaos suite's short mode, in make test: 90 seconds of contention
# under every kind of fault (those aimed at holders included) and 300
# waiters in the load phase (TestChaosShort, about 2 minutes); then its
# self-test (TestChaosTeeth, about 2 minutes): the suite, built with the
# variants of internal/mutants, runs briefly against four deliberately broken
# variants of the library (a hold that never learns of its session's loss,
# a grant that ignores its predecessor, an acquire that leaves its node on
# cancel, a semaphore that grants one lease too many) and must catch each
# as the right kind of violation. CHAOS_SEED=N replays TestChaosShort's
# schedule. Not under the race detector, for time: the sessions under
# test run on zklock's own session, whose reconnect order fixes
# go-zookeeper/zk#35 (TestChaosShort passes under -race); the suite's
# admin connections are go-zookeeper's. zklock's own code runs under
# -race in `make unit`, faults included.
chaos-short: deps
	$(GO) test -count=1 -timeout 20m -v -run 'TestChaosShort|TestChaosTeeth' ./internal/chaos

# Fuzz targets: pure functions, no server. go runs one fuzz target per
# invocation. Their seed corpora (testdata/fuzz/<name>/) also run in every
# plain `go test`. `make fuzz` runs each for FUZZTIME (default 30s);
# `make fuzz-short`, part of `make test`, for 100000 inputs each.
# Each target is package:name.
FUZZ_TARGETS := .:FuzzCompareUTF16 .:FuzzGetsTheLock .:FuzzSortChildren .:FuzzValidatePath .:FuzzProtectedName \
	./internal/zkwire:FuzzDecode
FUZZTIME     ?= 30s

fuzz:
	@for t in $(FUZZ_TARGETS); do \
		p=$${t%%:*}; f=$${t#*:}; \
		echo "$(GO) test -run XXX -fuzz '^$$f$$' -fuzztime $(FUZZTIME) $$p"; \
		$(GO) test -run XXX -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$p || exit 1; \
	done

# By count, not time: on a loaded machine a time-bounded run can end with
# "context deadline exceeded" from go's fuzz coordinator, not a finding.
fuzz-short:
	@$(MAKE) --no-print-directory fuzz FUZZTIME=100000x

clean:
	rm -f $(COVER) integration_test/coverage.out

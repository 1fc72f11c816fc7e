# zklock: `make test` is the test command (CI runs it through .ci/run).
# It installs or starts everything it needs: Debian's ZooKeeper for the
# root module, and a locally built ZooKeeper image for the integration
# module when a Docker engine answers.

GO      ?= go
RACE    ?= -race
PKG     := github.com/zklock/zklock
COVER   := coverage.out
MINCOV  ?= 85

.PHONY: test deps vet unit integration example demo cover fuzz bench clean

test: deps vet unit integration example

deps:
	@./internal/tools/ensure-deps.sh

vet:
	$(GO) vet ./...
	cd integration_test && $(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { echo "gofmt needed:"; gofmt -l .; exit 1; }

# Root module: unit tests and integration tests against a real ZooKeeper,
# with the race detector, goroutine-leak checks and root-package coverage.
unit:
	$(GO) test $(RACE) -count=1 -timeout 15m -covermode=atomic -coverpkg=$(PKG) -coverprofile=$(COVER) ./...
	@$(GO) tool cover -func=$(COVER) | tail -1
	@$(GO) tool cover -func=$(COVER) | awk '/^total:/ { sub("%","",$$3); if ($$3+0 < $(MINCOV)) { print "coverage " $$3 "% is below $(MINCOV)%"; exit 1 } }'

# Integration module: the testcontainers backend (image built locally from
# Debian's packages) and the multi-node scenarios.
integration:
	cd integration_test && $(GO) test $(RACE) -count=1 -timeout 30m ./...

# The README's example: two sessions taking turns.
example:
	$(GO) run ./examples/mutex

# The README's first command: the flash-sale oversell scenario, without a
# lock and with zklock's Mutex and Semaphore. Starts its own ZooKeeper
# unless ZK_SERVERS is set.
demo: deps
	$(GO) run ./examples/seckill

# Benchmarks (not part of `make test`): BENCHMARKS.md's workloads for zklock,
# Apache Curator and zk.Lock against a ZooKeeper of their own; tables on
# stdout, JSON in bench-results.json. See internal/bench/README.md.
#   make bench                  reference sizes, ZooKeeper's data on disk
#   make bench TMPFS=1          data on tmpfs (/dev/shm)
#   make bench QUICK=1          every workload shrunk: about a minute
#   make bench BENCHFLAGS='-workloads handoff -libs zklock,curator'
bench: deps
	$(GO) run ./internal/bench $(if $(filter 1 yes true,$(TMPFS)),-tmpfs) $(if $(filter 1 yes true,$(QUICK)),-quick) $(BENCHFLAGS)

fuzz:
	$(GO) test -run XXX -fuzz FuzzCompareUTF16 -fuzztime 30s .
	$(GO) test -run XXX -fuzz FuzzGetsTheLock -fuzztime 30s .

clean:
	rm -f $(COVER) integration_test/coverage.out

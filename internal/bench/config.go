package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Library names, as given to -libs and used in the JSON output.
const (
	libZklock  = "zklock"
	libCurator = "curator"
	libZK      = "zk" // go-zookeeper: zk.Lock, and the raw floor
)

// Workload names, as given to -workloads.
const (
	wFloor       = "floor"
	wUncontended = "uncontended"
	wContended   = "contended"
	wHandoff     = "handoff"
	wSemaphore   = "semaphore"
	wRWRead      = "rwread"
	wFailover    = "failover"
	wManyLocks   = "manylocks"
	wRoundTrips  = "roundtrips"
	wMemory      = "memory"
)

// allWorkloads lists every workload name, in the order they run.
func allWorkloads() []string {
	return []string{wFloor, wUncontended, wContended, wHandoff, wSemaphore, wRWRead, wFailover, wManyLocks, wRoundTrips, wMemory}
}

// How a failover's leader steps down (spec.Mode).
const (
	stepResign = "resign" // it resigns: Hold.Release, LeaderLatch.close()
	stepClose  = "close"  // its client closes, ending its session
)

// stepModes lists the ways to step down, in the order they run.
func stepModes() []string { return []string{stepResign, stepClose} }

// allLibs lists every library name, in column order.
func allLibs() []string { return []string{libZklock, libCurator, libZK} }

// sizes are the sizes of every workload.
type sizes struct {
	Floor        int           // floor: raw create+delete pairs
	Uncontended  int           // uncontended: acquire+release pairs
	LatPairs     int           // floor and uncontended in the latency regime
	Warmup       int           // unmeasured pairs before floor and uncontended
	PreWarm      int           // unmeasured pairs of the recipe before the other workloads
	ServerWarm   int           // unmeasured pairs per library before anything is timed
	ServerWarmS  time.Duration // then that long contended (Sessions) per library, unmeasured
	Contended    []int         // contended: C
	Sessions     int           // semaphore, rwread: C
	Leases       int           // semaphore: L
	Duration     time.Duration // contended, semaphore, rwread: S
	Handoff      []int         // handoff: W (loopback)
	HandoffMin   int           // handoff: at least this many handoffs per run (repetitions of a small W)
	LatHandoff   []int         // handoff: W (latency)
	Failover     []int         // failover: participants P (loopback)
	LatFailover  []int         // failover: P (latency)
	Failovers    int           // failover: timed failovers per run
	WarmFailover int           // failover: unmeasured failovers before the timed ones
	ManyLocks    []int         // manylocks: N, the distinct locks one session takes (loopback)
	LatManyLocks []int         // manylocks: N (latency)
	ManyG        []int         // manylocks: G, the goroutines sharing the N acquires (1: one after another)
	ManySeqMax   int           // manylocks: G=1 runs only up to this N (0: no bound); set by forRegime
	LatManySeq   int           // manylocks, latency: ManySeqMax there (0: no bound)
	RTPairs      int           // round trips: uncontended pairs counted
	RTHandoff    []int         // round trips: handoff W counted
	RTLoop       time.Duration // round trips: how long contended, semaphore and rwread are counted
	RTFailover   []int         // round trips: failover P counted
	RTFailovers  int           // round trips: failovers counted per run
	RTManyLocks  int           // round trips: manylocks N counted (G=1; 0: none)
	MemWaiters   int           // memory: W
	MemSessions  int           // memory: sessions sharing the W waiters
	SessionLimit time.Duration // session timeout of every session
}

// referenceSizes are BENCHMARKS.md's reference sizes.
func referenceSizes() sizes {
	return sizes{
		Floor: 2000, Uncontended: 2000, LatPairs: 1000, Warmup: 500, PreWarm: 200,
		ServerWarm: 3000, ServerWarmS: 3 * time.Second,
		Contended: []int{4, 16}, Sessions: 16, Leases: 4, Duration: 10 * time.Second,
		Handoff: []int{1, 2, 10, 1000, 2000}, LatHandoff: []int{1, 2, 10}, HandoffMin: 20,
		Failover: []int{3, 100}, LatFailover: []int{3, 100}, Failovers: 20, WarmFailover: 20,
		ManyLocks: []int{1000, 10000, 100000}, LatManyLocks: []int{1000, 10000, 100000}, ManyG: []int{1, 64}, LatManySeq: 10000,
		RTPairs: 200, RTHandoff: []int{1, 10, 100, 2000}, RTLoop: 2 * time.Second, RTFailover: []int{3}, RTFailovers: 5, RTManyLocks: 200,
		MemWaiters: 2000, MemSessions: 50,
		SessionLimit: 30 * time.Second,
	}
}

// quickSizes shrink everything so that a whole run takes a minute or two.
func quickSizes() sizes {
	s := referenceSizes()
	s.Floor, s.Uncontended, s.LatPairs, s.Warmup, s.PreWarm = 200, 200, 50, 50, 20
	s.ServerWarm, s.ServerWarmS = 300, 500*time.Millisecond
	s.Contended, s.Duration = []int{16}, time.Second
	s.Handoff, s.LatHandoff, s.HandoffMin = []int{1, 10}, []int{1}, 5
	s.Failover, s.LatFailover, s.Failovers, s.WarmFailover = []int{3}, []int{3}, 5, 5
	s.ManyLocks, s.LatManyLocks = []int{1000}, []int{200}
	s.RTPairs, s.RTHandoff, s.RTLoop, s.RTFailovers, s.RTManyLocks = 50, []int{1}, 300*time.Millisecond, 2, 50
	s.MemWaiters, s.MemSessions = 400, 20
	return s
}

// forRegime returns the sizes that apply in regime rg.
func (s sizes) forRegime(rg regime) sizes {
	s.ManySeqMax = 0
	if rg.Delay > 0 {
		s.Floor, s.Uncontended, s.Handoff, s.Failover = s.LatPairs, s.LatPairs, s.LatHandoff, s.LatFailover
		s.ManyLocks, s.ManySeqMax = s.LatManyLocks, s.LatManySeq
	}
	return s
}

// regime is how every session of a run reaches the server.
type regime struct {
	Name  string        // regLoopback or regLatency
	Delay time.Duration // added one way, by a proxy; 0 on loopback
}

// Regime names, as given to -regime.
const (
	regLoopback = "loopback"
	regLatency  = "latency"
)

// Server JVM settings, as given to -server-jvm.
const (
	jvmDefault = "default" // Java's defaults and zkServer.sh's heap
	jvmTest    = "test"    // zktest's: a small heap, serial GC, C1 only
)

// Rounds unless -rounds says otherwise: BENCHMARKS.md asks for at least
// three; -quick, a smoke check, makes do with two.
const (
	defaultRounds = 3
	quickRounds   = 2
)

// userServerJVM is the heap zkServer.sh gives ZooKeeper (ZK_SERVER_HEAP);
// everything else is Java's default.
const userServerJVM = "-Xmx1000m"

// config is what the flags ask for.
type config struct {
	Quick      bool
	Tmpfs      bool
	DataDir    string // parent of the server's data directory; "" picks one
	Workloads  []string
	Libs       []string
	Regimes    []regime
	Rounds     int           // rounds of every timed workload, the libraries' order rotated
	ServerJVM  string        // jvmDefault or jvmTest
	Limit      time.Duration // per workload and library
	JSONPath   string
	CPUProfile string        // file for a CPU profile of the process; "" for none
	Nudge      time.Duration // how often the controller reads (see nudge.go); 0: never
	ServerCPUs []int         // CPUs the server is pinned to, the clients to the others; nil: no pinning
	Sizes      sizes
}

// wants reports whether workload w was selected.
func (c config) wants(w string) bool { return slices.Contains(c.Workloads, w) }

// hasLib reports whether library l was selected.
func (c config) hasLib(l string) bool { return slices.Contains(c.Libs, l) }

// parseFlags parses the command line into a config.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	var workloads, libs, handoff, failover, many, manyG, regimes, serverCPUs string
	var dur, delay time.Duration
	fs.BoolVar(&c.Quick, "quick", false, "shrink every workload so the whole run takes a minute or two")
	fs.BoolVar(&c.Tmpfs, "tmpfs", false, "keep ZooKeeper's dataDir on tmpfs (/dev/shm) instead of disk")
	fs.StringVar(&c.DataDir, "datadir", "", "directory for ZooKeeper's dataDir (overrides the storage mode's choice)")
	fs.StringVar(&workloads, "workloads", strings.Join(allWorkloads(), ","), "comma-separated workloads to run")
	fs.StringVar(&libs, "libs", strings.Join(allLibs(), ","), "comma-separated libraries: zklock, curator, zk (go-zookeeper)")
	fs.DurationVar(&c.Limit, "limit", 180*time.Second, "time limit of each workload of each library; past it: DNF")
	fs.StringVar(&c.JSONPath, "json", "bench-results.json", "file to write the results to as JSON (\"\" for none)")
	fs.StringVar(&c.CPUProfile, "cpuprofile", "", "file to write a CPU profile of the tool's process to (the Go libraries run in it), for go tool pprof")
	fs.DurationVar(&c.Nudge, "nudge", defaultNudge, "how often to send the server a read during runs, against ZOOKEEPER-4537's stalls (0: never)")
	fs.StringVar(&regimes, "regime", "both", "loopback, latency or both: how the clients reach the server")
	fs.DurationVar(&delay, "delay", time.Millisecond, "latency regime: the delay added each way by a proxy")
	fs.IntVar(&c.Rounds, "rounds", 0, "rounds of every timed workload, the libraries' order rotated each round (0: 3, or 2 with -quick)")
	fs.StringVar(&c.ServerJVM, "server-jvm", jvmDefault, "the server's JVM: default (Java's defaults, "+userServerJVM+" as zkServer.sh) or test (zktest's: -Xmx256m, serial GC, C1 only)")
	fs.StringVar(&serverCPUs, "server-cpus", "", "comma-separated CPUs to pin the server to, the clients (this process and its harnesses) to the others: the server on cores of its own, as in production (Linux; default: no pinning)")
	fs.StringVar(&handoff, "handoff", "", "comma-separated handoff sizes W, both regimes (default: by mode and regime)")
	fs.StringVar(&failover, "failover", "", "comma-separated failover sizes P (participants), both regimes (default: by mode)")
	fs.DurationVar(&dur, "duration", 0, "duration S of the timed workloads (default: by mode)")
	fs.StringVar(&many, "manylocks", "", "comma-separated manylocks sizes N (distinct locks held at once), both regimes (default: by mode and regime)")
	fs.StringVar(&manyG, "manylocks-g", "", "comma-separated manylocks concurrency G (goroutines or threads sharing the N acquires; 1: one after another) (default: 1,64)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: go run ./internal/bench [flags]\n\nRuns BENCHMARKS.md's workloads for zklock, Curator and zk.Lock.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if err := c.setRegimes(regimes, delay); err != nil {
		return config{}, err
	}
	cpus, err := parseCPUs(serverCPUs)
	if err != nil {
		return config{}, err
	}
	c.ServerCPUs = cpus
	c, err = c.finish(workloads, libs, handoff, failover, dur)
	if err != nil {
		return c, err
	}
	return c.setManyLocks(many, manyG)
}

// parseCPUs parses -server-cpus: CPU numbers, comma-separated; a CPU
// named twice counts once.
func parseCPUs(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	cpus, err := parseInts(s, 0)
	if err != nil {
		return nil, fmt.Errorf("-server-cpus: %w", err)
	}
	var out []int
	for _, n := range cpus {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

// setRegimes validates -regime, -delay, -rounds and -server-jvm.
func (c *config) setRegimes(regimes string, delay time.Duration) error {
	switch {
	case c.Rounds == 0 && c.Quick:
		c.Rounds = quickRounds
	case c.Rounds == 0:
		c.Rounds = defaultRounds
	}
	switch {
	case c.Rounds < 0:
		return errors.New("-rounds must not be negative")
	case c.ServerJVM != jvmDefault && c.ServerJVM != jvmTest:
		return fmt.Errorf("-server-jvm %q: want %s or %s", c.ServerJVM, jvmDefault, jvmTest)
	case delay <= 0:
		return errors.New("-delay must be positive")
	}
	lo, lat := regime{Name: regLoopback}, regime{Name: regLatency, Delay: delay}
	switch strings.ToLower(regimes) {
	case regLoopback:
		c.Regimes = []regime{lo}
	case regLatency:
		c.Regimes = []regime{lat}
	case "both", "":
		c.Regimes = []regime{lo, lat}
	default:
		return fmt.Errorf("-regime %q: want loopback, latency or both", regimes)
	}
	return nil
}

// finish validates and applies the list-valued flags.
func (c config) finish(workloads, libs, handoff, failover string, dur time.Duration) (config, error) {
	var err error
	if c.Workloads, err = pickList("workload", workloads, allWorkloads(), nil); err != nil {
		return c, err
	}
	aliases := map[string]string{"zk.lock": libZK, "go-zk": libZK, "go-zookeeper": libZK}
	if c.Libs, err = pickList("library", libs, allLibs(), aliases); err != nil {
		return c, err
	}
	if c.Limit <= 0 {
		return c, errors.New("-limit must be positive")
	}
	if c.Nudge < 0 {
		return c, errors.New("-nudge must not be negative")
	}
	c.Sizes = referenceSizes()
	if c.Quick {
		c.Sizes = quickSizes()
	}
	if dur < 0 {
		return c, errors.New("-duration must be positive")
	} else if dur > 0 {
		c.Sizes.Duration = dur
	}
	if handoff != "" {
		if c.Sizes.Handoff, err = parseInts(handoff, 1); err != nil {
			return c, fmt.Errorf("-handoff: %w", err)
		}
		c.Sizes.LatHandoff = c.Sizes.Handoff
	}
	if failover != "" {
		if c.Sizes.Failover, err = parseInts(failover, 1); err != nil {
			return c, fmt.Errorf("-failover: %w", err)
		}
		if slices.Min(c.Sizes.Failover) < 2 {
			return c, errors.New("-failover: a failover needs at least 2 participants")
		}
		c.Sizes.LatFailover = c.Sizes.Failover
	}
	return c, nil
}

// setManyLocks applies -manylocks and -manylocks-g. Sizes given by flag
// run in both regimes as given: the latency regime's bound on sequential
// runs applies to the default sizes only.
func (c config) setManyLocks(many, manyG string) (config, error) {
	var err error
	if many != "" {
		if c.Sizes.ManyLocks, err = parseInts(many, 1); err != nil {
			return c, fmt.Errorf("-manylocks: %w", err)
		}
		c.Sizes.LatManyLocks, c.Sizes.LatManySeq = c.Sizes.ManyLocks, 0
	}
	if manyG != "" {
		if c.Sizes.ManyG, err = parseInts(manyG, 1); err != nil {
			return c, fmt.Errorf("-manylocks-g: %w", err)
		}
	}
	return c, nil
}

// pickList parses a comma list of names from known (after aliases) and
// returns them in known's order.
func pickList(what, list string, known []string, aliases map[string]string) ([]string, error) {
	want := make(map[string]bool)
	for _, name := range strings.Split(list, ",") {
		name = strings.ToLower(strings.TrimSpace(name))
		if a, ok := aliases[name]; ok {
			name = a
		}
		if name == "" {
			continue
		}
		if !slices.Contains(known, name) {
			return nil, fmt.Errorf("unknown %s %q (known: %s)", what, name, strings.Join(known, ", "))
		}
		want[name] = true
	}
	var out []string
	for _, name := range known {
		if want[name] {
			out = append(out, name)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no %s selected", what)
	}
	return out, nil
}

// parseInts parses a comma list of integers of at least least.
func parseInts(list string, least int) ([]int, error) {
	var out []int
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < least {
			return nil, fmt.Errorf("%q is not an integer of at least %d", f, least)
		}
		out = append(out, n)
	}
	return out, nil
}

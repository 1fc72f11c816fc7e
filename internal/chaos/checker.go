package main

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// kind is what a critical section held.
type kind int

const (
	kindMutex  kind = iota // the Mutex
	kindRead               // the ReadWriteLock's read side
	kindWrite              // the ReadWriteLock's write side
	kindLease              // a Semaphore lease
	kindLeader             // leadership of the Election
	kindSolo               // the solo Mutex, taken in bursts by two sessions, mostly alone
	numKinds
)

func (k kind) String() string {
	return [...]string{"mutex", "read", "write", "lease", "leader", "solo"}[k]
}

// lock names the lock a kind of section belongs to.
func (k kind) lock() string {
	switch k {
	case kindRead, kindWrite:
		return "rwlock"
	case kindLease:
		return "semaphore"
	case kindLeader:
		return "election"
	case kindSolo:
		return "solo"
	}
	return "mutex"
}

// exclusiveLocks are the locks whose sections the checker orders by
// exclusion and tokens; the semaphore is checked by counting leases.
var exclusiveLocks = []string{"mutex", "rwlock", "election", "solo"}

// section is one critical section, as its worker believed it: from the
// grant (start, read after Acquire returned) until the worker chose to
// release (end, read before Release is called) or its hold's context
// ended, whichever came first (until). What the worker did meanwhile
// does not shorten it: a guarded write that fails on a dead connection
// leaves the worker believing, as a user who does not fence would. So
// two recorded sections that overlap believed they held the lock at the
// same time, which the library promises cannot happen unless the earlier
// had been told that its hold was lost.
type section struct {
	kind  kind
	who   string // session and worker, such as "s03/mutex"
	token int64  // fencing token of the hold
	long  bool   // a long section, of one to two session timeouts
	via   string // the server the session was connected to at the grant
	start time.Time
	end   time.Time
	// lost is when the hold's context (a lease's Done) ended with
	// ErrLockLost while the worker held it; zero if it was not lost. It is
	// read on a goroutine woken by the cancellation, so it is no earlier
	// than the real notice.
	lost time.Time
}

// until is when the section stopped counting as a holder: its end, or the
// moment it was told the hold was lost, if that came first.
func (s section) until() time.Time {
	if !s.lost.IsZero() && s.lost.Before(s.end) {
		return s.lost
	}
	return s.end
}

// fencedWrite is a write to the guarded resource that ZooKeeper accepted.
type fencedWrite struct {
	kind  kind
	zxid  int64 // the write's mzxid: ZooKeeper's order of the writes
	token int64 // the writer's fencing token
	who   string
}

// journal collects sections and accepted writes from every worker.
type journal struct {
	mu       sync.Mutex
	sections []section
	writes   []fencedWrite
	problems []string // violations seen by workers as they happened
	notes    []string // what workers saw that is not a violation but tells of the run
}

func (j *journal) add(s section) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.sections = append(j.sections, s)
}

func (j *journal) wrote(w fencedWrite) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.writes = append(j.writes, w)
}

func (j *journal) problem(format string, args ...any) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.problems = append(j.problems, fmt.Sprintf(format, args...))
}

// note records an observation for the report.
func (j *journal) note(format string, args ...any) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.notes = append(j.notes, fmt.Sprintf(format, args...))
}

// The kinds of violation, each the prefix of its lines.
const (
	violTwoHolders  = "two holders"
	violUnsignalled = "unsignalled loss" // a loss told after another was granted, or never
	violLeases      = "too many leases"
	violTokens      = "token went back"
	violStale       = "stale write accepted"
)

// violationKinds counts violations by kind (their prefix); "other" for
// the rest.
func violationKinds(vs []string) map[string]int {
	out := map[string]int{}
	for _, l := range vs {
		k := "other"
		for _, p := range []string{violUnsignalled, violTwoHolders, violLeases, violTokens, violStale} {
			if strings.HasPrefix(l, p) {
				k = p
				break
			}
		}
		out[k]++
	}
	return out
}

// verdict is what the checker found.
type verdict struct {
	violations        []string
	lostBeforeOverlap []string // overlaps allowed because the earlier hold had been told it was lost
	maxLeases         int      // most semaphore leases held at once
}

// check runs every check over the journal. maxLeases is the semaphore's.
func (j *journal) check(maxLeases int) verdict {
	j.mu.Lock()
	defer j.mu.Unlock()
	var v verdict
	v.violations = append(v.violations, j.problems...)
	byLock := map[string][]section{}
	for _, s := range j.sections {
		byLock[s.kind.lock()] = append(byLock[s.kind.lock()], s)
	}
	for _, lock := range exclusiveLocks {
		secs := byLock[lock]
		slices.SortFunc(secs, func(a, b section) int { return a.start.Compare(b.start) })
		checkExclusion(secs, &v)
		checkTokens(secs, &v)
	}
	v.maxLeases = checkLeases(byLock["semaphore"], maxLeases, &v)
	checkWrites(j.writes, &v)
	return v
}

// excludes reports whether two sections of the same lock may not overlap:
// two holds of a Mutex, two leaderships, a writer with anyone.
func excludes(a, b section) bool {
	return a.kind == kindMutex || a.kind == kindLeader || a.kind == kindSolo || a.kind == kindWrite || b.kind == kindWrite
}

// checkExclusion finds exclusive sections that overlap; secs is sorted by
// start. An overlap is allowed only if the earlier holder had been told
// that its hold was lost before the later one started. One where the
// earlier was told only later is an unsignalled loss: the library learnt
// of the loss too late (or not at all) while another was granted.
func checkExclusion(secs []section, v *verdict) {
	for i, a := range secs {
		for _, b := range secs[i+1:] {
			if !b.start.Before(a.end) {
				break
			}
			if !excludes(a, b) {
				continue
			}
			line := fmt.Sprintf("%s %s [%s, %s] overlaps %s %s from %s", a.kind, a.who, stamp(a.start), stamp(a.end),
				b.kind, b.who, stamp(b.start))
			switch {
			case !b.start.Before(a.until()):
				v.lostBeforeOverlap = append(v.lostBeforeOverlap, line+fmt.Sprintf(" (lost at %s)", stamp(a.lost)))
			case !a.lost.IsZero():
				v.violations = append(v.violations, fmt.Sprintf("%s: %s: %s; the earlier was told of its loss only at %s, %v after the later's grant",
					violUnsignalled, violTwoHolders, line, stamp(a.lost), a.lost.Sub(b.start).Round(time.Millisecond)))
			default:
				v.violations = append(v.violations, violTwoHolders+": "+line)
			}
		}
	}
}

// checkTokens checks that fencing tokens grow from holder to holder:
// every section's token exceeds the token of every section it excludes
// that started before it. secs is sorted by start.
func checkTokens(secs []section, v *verdict) {
	var maxAll, maxWrite section // the greatest tokens so far: of any section, of exclusive ones
	for _, s := range secs {
		prev := maxWrite
		if excludes(s, s) {
			prev = maxAll
		}
		if prev.token != 0 && s.token <= prev.token {
			v.violations = append(v.violations, fmt.Sprintf(violTokens+": %s %s got %d at %s after %s %s got %d at %s",
				s.kind, s.who, s.token, stamp(s.start), prev.kind, prev.who, prev.token, stamp(prev.start)))
		}
		if s.token > maxAll.token {
			maxAll = s
		}
		if excludes(s, s) && s.token > maxWrite.token {
			maxWrite = s
		}
	}
}

// checkLeases sweeps the semaphore's sections and reports the most held
// at once; more than maxLeases is a violation, an unsignalled loss if one
// of the leases out had been lost but was told only later.
func checkLeases(secs []section, maxLeases int, v *verdict) int {
	type edge struct {
		at    time.Time
		delta int
		i     int // index in secs
	}
	var edges []edge
	for i, s := range secs {
		edges = append(edges, edge{s.start, +1, i}, edge{s.until(), -1, i})
	}
	// Ends sort before starts at the same instant.
	slices.SortFunc(edges, func(a, b edge) int {
		return cmp.Or(a.at.Compare(b.at), cmp.Compare(a.delta, b.delta))
	})
	open := map[int]bool{}
	most := 0
	for _, e := range edges {
		if e.delta < 0 {
			delete(open, e.i)
			continue
		}
		open[e.i] = true
		most = max(most, len(open))
		if len(open) <= maxLeases {
			continue
		}
		var out []string
		for i := range open {
			out = append(out, fmt.Sprintf("%s token %d via %s [%s, %s]", secs[i].who, secs[i].token, secs[i].via, stamp(secs[i].start), stamp(secs[i].until())))
		}
		slices.Sort(out)
		line := fmt.Sprintf("%s: %d leases held at %s (max %d), the last by %s (out: %s)", violLeases, len(open), stamp(e.at), maxLeases, secs[e.i].who, strings.Join(out, ", "))
		for i := range open {
			if l := secs[i].lost; !l.IsZero() && l.After(e.at) {
				line = fmt.Sprintf("%s: %s; %s was told of its loss only at %s", violUnsignalled, line, secs[i].who, stamp(l))
				break
			}
		}
		v.violations = append(v.violations, line)
	}
	return most
}

// checkWrites checks the guarded writes ZooKeeper accepted, in the order
// it applied them: an exclusive holder's write carries a token no smaller
// than any earlier write's, and no write carries a token smaller than an
// earlier exclusive holder's. A write with a stale token that got through
// would show here. Semaphore leases are not ordered among themselves.
func checkWrites(ws []fencedWrite, v *verdict) {
	slices.SortFunc(ws, func(a, b fencedWrite) int { return cmp.Compare(a.zxid, b.zxid) })
	type high struct{ all, excl fencedWrite }
	last := map[string]*high{}
	for _, w := range ws {
		if w.kind == kindLease {
			continue
		}
		h := last[w.kind.lock()]
		if h == nil {
			h = &high{}
			last[w.kind.lock()] = h
		}
		prev := h.excl
		if excludes(section{kind: w.kind}, section{kind: w.kind}) {
			prev = h.all
		}
		if w.token < prev.token {
			v.violations = append(v.violations, fmt.Sprintf(violStale+" on %s: %s %s with token %d after %s %s with token %d",
				w.kind.lock(), w.kind, w.who, w.token, prev.kind, prev.who, prev.token))
		}
		if w.token > h.all.token {
			h.all = w
		}
		if excludes(section{kind: w.kind}, section{kind: w.kind}) && w.token > h.excl.token {
			h.excl = w
		}
	}
}

func stamp(t time.Time) string { return t.Format("15:04:05.000") }

package main

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
	"time"
)

// kind is what a critical section held.
type kind int

const (
	kindMutex kind = iota // the Mutex
	kindRead              // the ReadWriteLock's read side
	kindWrite             // the ReadWriteLock's write side
	kindLease             // a Semaphore lease
)

func (k kind) String() string {
	return [...]string{"mutex", "read", "write", "lease"}[k]
}

// lockOf names the lock a kind of section belongs to.
func (k kind) lock() string {
	switch k {
	case kindRead, kindWrite:
		return "rwlock"
	case kindLease:
		return "semaphore"
	}
	return "mutex"
}

// section is one critical section, as its worker saw it. The interval
// [start, end] is a subset of the time the lock was really held: start is
// read after Acquire returned, end before Release is called. So two
// recorded sections that overlap held the lock at the same time.
type section struct {
	kind  kind
	who   string // session and worker, such as "s03/mutex"
	token int64  // fencing token of the hold
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
	for _, lock := range []string{"mutex", "rwlock"} {
		secs := byLock[lock]
		slices.SortFunc(secs, func(a, b section) int { return a.start.Compare(b.start) })
		checkExclusion(secs, &v)
		checkTokens(secs, &v)
	}
	v.maxLeases = checkLeases(byLock["semaphore"], maxLeases, &v)
	checkWrites(j.writes, &v)
	return v
}

// excludes reports whether two sections of the same lock may not overlap.
func excludes(a, b section) bool {
	return a.kind == kindMutex || a.kind == kindWrite || b.kind == kindWrite
}

// checkExclusion finds exclusive sections that overlap; secs is sorted by
// start. An overlap is allowed only if the earlier holder had been told
// that its hold was lost before the later one started.
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
			if b.start.Before(a.until()) {
				v.violations = append(v.violations, "two holders: "+line)
			} else {
				v.lostBeforeOverlap = append(v.lostBeforeOverlap, line+fmt.Sprintf(" (lost at %s)", stamp(a.lost)))
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
			v.violations = append(v.violations, fmt.Sprintf("token went back: %s %s got %d at %s after %s %s got %d at %s",
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
// at once; more than maxLeases is a violation.
func checkLeases(secs []section, maxLeases int, v *verdict) int {
	type edge struct {
		at    time.Time
		delta int
		who   string
	}
	var edges []edge
	for _, s := range secs {
		edges = append(edges, edge{s.start, +1, s.who}, edge{s.until(), -1, s.who})
	}
	// Ends sort before starts at the same instant.
	slices.SortFunc(edges, func(a, b edge) int {
		return cmp.Or(a.at.Compare(b.at), cmp.Compare(a.delta, b.delta))
	})
	held, most := 0, 0
	for _, e := range edges {
		held += e.delta
		if held > most {
			most = held
		}
		if e.delta > 0 && held > maxLeases {
			v.violations = append(v.violations, fmt.Sprintf("%d leases held at %s (max %d), the last by %s",
				held, stamp(e.at), maxLeases, e.who))
		}
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
			v.violations = append(v.violations, fmt.Sprintf("stale write accepted on %s: %s %s with token %d after %s %s with token %d",
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

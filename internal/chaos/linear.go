package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// The second judge: the recorded history, checked for linearizability by
// Porcupine against models kept here, independent of checker.go's sweeps.
// Each critical section is two operations of its worker: an acquire that
// takes effect at the grant, and a release that takes effect when the
// worker stopped counting as a holder (section.until: it released, or it
// was told that its hold was lost). A model refuses a history in which no
// order of those operations, each at a point of its interval, keeps it
// legal: two holders, a lease too many, a reader with a writer, a fencing
// token that does not grow. Accepted guarded writes, ordered by their
// zxid, are operations on a register that refuses a token older than the
// newest one written. The history is partitioned per lock (and per
// resource), so that each check stays small.

// linearTimeout bounds the check of one partition; a partition not
// decided by then counts as a failure (Unknown proves nothing).
const linearTimeout = time.Minute

// lockIn is one operation on a lock: acquire (with the hold's token) or
// release, by the worker who, of kind k.
type lockIn struct {
	acquire bool
	who     string
	k       kind
	token   int64
}

// lockState is a lock's state in the models: who holds it, as a sorted,
// comma-separated list of "kind:who" (a string, so that states compare
// with ==), and the greatest tokens granted, of any hold and of exclusive
// ones.
type lockState struct {
	holders  string
	maxAll   int64
	maxWrite int64
}

func (s lockState) list() []string {
	if s.holders == "" {
		return nil
	}
	return strings.Split(s.holders, ",")
}

func withHolders(s lockState, hs []string) lockState {
	slices.Sort(hs)
	s.holders = strings.Join(hs, ",")
	return s
}

// lockModel is the model of one lock: a Mutex or an Election (one holder),
// a ReadWriteLock (readers share, a writer excludes), or a Semaphore of
// leases leases. A grant's token must exceed every token granted before
// it that it excludes.
func lockModel(leases int) porcupine.Model {
	return porcupine.Model{
		Init: func() any { return lockState{} },
		Step: func(state, input, _ any) (bool, any) {
			s, in := state.(lockState), input.(lockIn)
			id := fmt.Sprintf("%s:%s", in.k, in.who)
			hs := s.list()
			if !in.acquire {
				i := slices.Index(hs, id)
				if i < 0 {
					return false, s // released what it did not hold
				}
				return true, withHolders(s, slices.Delete(hs, i, i+1))
			}
			if !admits(hs, in.k, leases) {
				return false, s
			}
			prev := s.maxWrite
			if excludes(section{kind: in.k}, section{kind: in.k}) {
				prev = s.maxAll
			}
			if in.token <= prev {
				return false, s // the token went back
			}
			s.maxAll = max(s.maxAll, in.token)
			if excludes(section{kind: in.k}, section{kind: in.k}) {
				s.maxWrite = max(s.maxWrite, in.token)
			}
			return true, withHolders(s, append(hs, id))
		},
		DescribeOperation: func(input, _ any) string {
			in := input.(lockIn)
			if in.acquire {
				return fmt.Sprintf("%s %s acquires (token %d)", in.k, in.who, in.token)
			}
			return fmt.Sprintf("%s %s releases", in.k, in.who)
		},
		DescribeState: func(state any) string {
			s := state.(lockState)
			return fmt.Sprintf("holders [%s], max token %d", s.holders, s.maxAll)
		},
	}
}

// admits reports whether a lock whose holders are hs may grant one more
// of kind k: a semaphore while fewer than leases are out, a read lock
// while no writer holds, anything else only while no one holds.
func admits(hs []string, k kind, leases int) bool {
	switch k {
	case kindLease:
		return len(hs) < leases
	case kindRead:
		for _, h := range hs {
			if strings.HasPrefix(h, kindWrite.String()+":") {
				return false
			}
		}
		return true
	}
	return len(hs) == 0
}

// written is a guarded resource's state: the newest tokens written, by
// any holder and by exclusive ones.
type written struct{ all, exclusive int64 }

// registerModel is the model of a guarded resource: an exclusive holder's
// write is accepted only with a token no older than any written before, a
// reader's only with one no older than any exclusive holder's; leases,
// which share the semaphore, are not ordered.
func registerModel() porcupine.Model {
	return porcupine.Model{
		Init: func() any { return written{} },
		Step: func(state, input, _ any) (bool, any) {
			s, w := state.(written), input.(fencedWrite)
			switch {
			case w.kind == kindLease:
				return true, s
			case excludes(section{kind: w.kind}, section{kind: w.kind}):
				if w.token < s.all {
					return false, s
				}
				s.exclusive = max(s.exclusive, w.token)
			case w.token < s.exclusive:
				return false, s
			}
			s.all = max(s.all, w.token)
			return true, s
		},
		DescribeOperation: func(input, _ any) string {
			w := input.(fencedWrite)
			return fmt.Sprintf("%s %s writes with token %d (zxid %d)", w.kind, w.who, w.token, w.zxid)
		},
		DescribeState: func(state any) string {
			s := state.(written)
			return fmt.Sprintf("newest token %d (exclusive %d)", s.all, s.exclusive)
		},
	}
}

// judgement is the Porcupine verdict on one partition of the history.
type judgement struct {
	model  string // which model judged it
	part   string // the lock or resource
	ops    int
	result porcupine.CheckResult
	html   string // the visualisation of a refused partition, if written
}

func (j judgement) ok() bool { return j.result == porcupine.Ok }

func (j judgement) String() string {
	s := fmt.Sprintf("%s on %s: %s (%d operations)", j.model, j.part, verdictWord(j.result), j.ops)
	if j.html != "" {
		s += ", visualised in " + j.html
	}
	return s
}

func verdictWord(r porcupine.CheckResult) string {
	switch r {
	case porcupine.Ok:
		return "linearizable"
	case porcupine.Illegal:
		return "NOT linearizable"
	}
	return "UNDECIDED (the check timed out; counted as a failure)"
}

// judge checks the journal's history with Porcupine, one partition per
// lock and per guarded resource, and writes the visualisation of each
// refused partition into dir ("" for none).
func (j *journal) judge(maxLeases int, dir string) []judgement {
	j.mu.Lock()
	secs, writes := slices.Clone(j.sections), slices.Clone(j.writes)
	j.mu.Unlock()
	clients := map[string]int{}
	client := func(who string) int {
		if id, ok := clients[who]; ok {
			return id
		}
		clients[who] = len(clients)
		return clients[who]
	}
	byLock := map[string][]porcupine.Operation{}
	for _, s := range secs {
		id, lock := client(s.who+"/"+s.kind.String()), s.kind.lock()
		at, until := s.start.UnixNano(), s.until().UnixNano()
		byLock[lock] = append(byLock[lock],
			porcupine.Operation{ClientId: id, Input: lockIn{acquire: true, who: s.who, k: s.kind, token: s.token}, Call: at, Return: at},
			porcupine.Operation{ClientId: id, Input: lockIn{who: s.who, k: s.kind}, Call: until, Return: until})
	}
	byResource := map[string][]porcupine.Operation{}
	for _, w := range writes {
		// ZooKeeper's order of the writes is their zxid: one point each.
		byResource[w.kind.lock()] = append(byResource[w.kind.lock()],
			porcupine.Operation{ClientId: client(w.who + "/" + w.kind.String()), Input: w, Call: w.zxid, Return: w.zxid})
	}
	var out []judgement
	for _, lock := range sortedKeys(byLock) {
		leases := 1
		if lock == kindLease.lock() {
			leases = maxLeases
		}
		out = append(out, check(lockModel(leases), "lock", lock, byLock[lock], dir))
	}
	for _, res := range sortedKeys(byResource) {
		out = append(out, check(registerModel(), "fenced register", res, byResource[res], dir))
	}
	return out
}

// check runs one partition's check, and visualises it if it is refused.
func check(m porcupine.Model, model, part string, ops []porcupine.Operation, dir string) judgement {
	res, info := porcupine.CheckOperationsVerbose(m, ops, linearTimeout)
	jg := judgement{model: model, part: part, ops: len(ops), result: res}
	if res != porcupine.Ok && dir != "" {
		p := filepath.Join(dir, fmt.Sprintf("porcupine-%s-%s.html", strings.ReplaceAll(model, " ", "-"), part))
		if err := porcupine.VisualizePath(m, info, p); err == nil {
			jg.html = p
		} else {
			fmt.Fprintf(os.Stderr, "chaos: visualise %s: %v\n", part, err)
		}
	}
	return jg
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

package main

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklock/zklock/internal/zktest"
)

// The many-locks workload: one session takes N distinct locks, holds them
// all, then releases them all. Each lock has a parent of its own, which
// the tool creates beforehand with its controller session (createLocks),
// the same for every library, so that what is timed and counted is the
// acquire proper, not the creation of parents.

// manyParallel is how many requests the controller keeps in flight while
// it creates or deletes a many-locks run's parents.
const manyParallel = 64

// manyLocks: one session takes the N locks sp.Path-0 .. sp.Path-(N-1),
// from sp.G goroutines each taking every G-th (G=1: one after another on
// this goroutine), holds them all, then releases them all the same way.
// The acquire-all and the release-all are timed apart. Between them, once
// every lock is held, the process's heap, stack and goroutines are read
// after a GC and compared with the same reading taken before the lock
// objects were made: the objects are part of what a hold costs.
func (g *goLib) manyLocks(ctx context.Context, sp spec, ep endpoints, ph phaser, set *sessionSet) (raw, error) {
	ss, err := g.warmSessions(ctx, sp, ep.Servers, 1, set)
	if err != nil {
		return raw{}, err
	}
	ls := make([]locker, sp.N) // the tool's own slice: not counted
	before := takeMem()
	for i := range ls {
		if ls[i], err = ss[0].mutex(manyPath(sp.Path, i)); err != nil {
			return raw{}, err
		}
	}
	if err := ph(ctx, phaseReady); err != nil {
		return raw{}, err
	}
	acq, err := spread(ctx, ls, sp.goroutines(), set, func(l locker) error { return l.acquire(ctx) })
	if err != nil {
		return raw{}, fmt.Errorf("acquire: %w", err)
	}
	if err := ph(ctx, phaseHeld); err != nil {
		return raw{}, err
	}
	after := takeMem()
	if err := ph(ctx, phaseRelease); err != nil {
		return raw{}, err
	}
	rel, err := spread(ctx, ls, sp.goroutines(), set, locker.release)
	if err != nil {
		return raw{}, fmt.Errorf("release: %w", err)
	}
	stack := int64(after.StackInuse) - int64(before.StackInuse)
	live := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	r := raw{
		Ops: int64(sp.N), Seconds: acq.Seconds(), ReleaseSeconds: rel.Seconds(),
		HeldHeap: int64(after.HeapInuse) - int64(before.HeapInuse), HeldLive: &live, HeldStack: &stack,
		HeldTasks: int64(after.Goroutines - before.Goroutines),
	}
	return r, ph(ctx, phaseMeasured)
}

// spread runs f on every locker, from g goroutines each taking every g-th
// (g=1: in order, on the calling goroutine), and returns the time until
// all are done. The goroutines are set's, and have returned when spread
// returns without an error.
func spread(ctx context.Context, ls []locker, g int, set *sessionSet, f func(locker) error) (time.Duration, error) {
	start := time.Now()
	if g <= 1 {
		for i, l := range ls {
			if err := f(l); err != nil {
				return 0, fmt.Errorf("lock %d: %w", i, err)
			}
		}
		return time.Since(start), nil
	}
	cr := set.newCrew()
	for w := range min(g, len(ls)) {
		cr.spawn(func() error {
			for i := w; i < len(ls); i += g {
				if err := f(ls[i]); err != nil {
					return fmt.Errorf("lock %d: %w", i, err)
				}
			}
			return nil
		})
	}
	if err := cr.wait(ctx); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// prepare creates what sp's run needs before it starts, with the
// controller session, neither timed nor counted: a many-locks run's
// parents.
func (e *env) prepare(sp spec) error {
	if sp.Workload != wManyLocks {
		return nil
	}
	return e.createLocks(sp.Path, sp.N)
}

// teardown deletes the nodes of sp's run: a many-locks run's parents
// first, a few at a time, then what cleanup deletes.
func (e *env) teardown(sp spec) error {
	var err error
	if sp.Workload == wManyLocks {
		err = e.dropLocks(sp.Path, sp.N)
	}
	return errors.Join(err, e.cleanup(sp.Path))
}

// createLocks creates the parents of n locks on base (base-0 ..
// base-(n-1)) as empty persistent nodes, and base's own parents.
func (e *env) createLocks(base string, n int) error {
	if err := createParents(e.ctl.c, path.Dir(base)); err != nil {
		return err
	}
	return eachLock(n, func(i int) error {
		p := manyPath(base, i)
		_, err := e.ctl.c.Create(p, nil, 0, zk.WorldACL(zk.PermAll))
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("create %s: %w", p, err)
		}
		return nil
	})
}

// dropLocks deletes the parents of n locks on base and anything left
// under them (a run that failed may leave lock nodes behind). The names
// are known, so the wide parent of them all is never listed.
func (e *env) dropLocks(base string, n int) error {
	return eachLock(n, func(i int) error {
		p := manyPath(base, i)
		err := e.ctl.c.Delete(p, -1)
		switch {
		case err == nil, errors.Is(err, zk.ErrNoNode):
			return nil
		case errors.Is(err, zk.ErrNotEmpty):
			return zktest.DeleteTree(e.ctl.c, p)
		}
		return fmt.Errorf("delete %s: %w", p, err)
	})
}

// eachLock runs f(0) .. f(n-1) on manyParallel goroutines, which
// go-zookeeper pipelines on one connection, and returns the first error;
// after one, no new f starts.
func eachLock(n int, f func(i int) error) error {
	var next atomic.Int64
	var failed atomic.Bool
	errs := make([]error, manyParallel)
	var wg sync.WaitGroup
	for w := range manyParallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !failed.Load() {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := f(i); err != nil {
					errs[w] = err
					failed.Store(true)
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

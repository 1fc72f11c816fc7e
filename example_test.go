package zklock_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zklock/zklock"
	"github.com/zklock/zklock/internal/zktest"
)

// zkServers returns the servers of the test binary's shared ZooKeeper. In
// your code, this is your ensemble, such as []string{"127.0.0.1:2181"}.
func zkServers() []string {
	servers, err := zktest.SharedServers()
	if err != nil {
		log.Fatal(err)
	}
	return servers
}

// connect returns a Client on the test binary's shared ZooKeeper.
func connect(opts ...zklock.Option) *zklock.Client {
	client, err := zklock.Connect(zkServers(), opts...)
	if err != nil {
		log.Fatal(err)
	}
	return client
}

// Lock returns the hold as a Hold: defer its Release, which cannot pick
// the wrong context. Pass hd.Context() down the call chain: a Lock with it
// re-enters, and returns another Hold that owes its own Release.
func ExampleMutex_Lock() {
	client := connect()
	defer client.Close()
	m, err := zklock.NewMutex(client, "/examples/lock")
	if err != nil {
		log.Fatal(err)
	}

	// audit runs under a hold that its caller passed down: it re-enters.
	audit := func(ctx context.Context) error {
		hd, err := m.Lock(ctx)
		if err != nil {
			return err
		}
		defer hd.Release()
		fmt.Println("audit: held, re-entered:", hd.Err() == nil)
		return nil
	}

	// update takes the lock for the whole of its work.
	var outer *zklock.Hold
	update := func(ctx context.Context) error {
		hd, err := m.Lock(ctx)
		if err != nil {
			return err
		}
		defer hd.Release()
		outer = hd
		token, err := hd.Token() // pass it to storage that rejects older tokens
		if err != nil {
			return err
		}
		fmt.Println("update: held, fencing token > 0:", token > 0)
		if err := audit(hd.Context()); err != nil {
			return err
		}
		fmt.Println("update: still held after audit's release:", hd.Err() == nil)
		return nil
	}

	if err := update(context.Background()); err != nil {
		log.Fatal(err)
	}
	fmt.Println("after update:", outer.Err())
	// A Hold owes one Release: another one changes nothing, and says so.
	fmt.Println("released twice:", errors.Is(outer.Release(), zklock.ErrNotHeld))
	// Output:
	// update: held, fencing token > 0: true
	// audit: held, re-entered: true
	// update: still held after audit's release: true
	// after update: zklock: lock released
	// released twice: true
}

// TryLock does not wait: ErrLocked if another participant holds the lock.
func ExampleMutex_TryLock() {
	alice := connect()
	defer alice.Close()
	bob := connect()
	defer bob.Close()

	ma, _ := zklock.NewMutex(alice, "/examples/try")
	mb, _ := zklock.NewMutex(bob, "/examples/try")
	held, err := ma.Lock(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	defer held.Release() // in case of an early return; a second Release changes nothing

	_, err = mb.TryLock(context.Background())
	fmt.Println("bob:", errors.Is(err, zklock.ErrLocked))
	_ = held.Release()

	hd, err := mb.TryLock(context.Background())
	fmt.Println("bob after alice released:", err == nil)
	if err == nil {
		_ = hd.Release()
	}
	// Output:
	// bob: true
	// bob after alice released: true
}

// Acquire and Release by context are the second form, in the manner of
// Curator's InterProcessMutex: Acquire returns the context that carries the
// hold; pass it down, and an Acquire with it re-enters. Release with the
// context that Acquire returned, the same variable (ctx, err :=
// m.Acquire(ctx)): any other context releases nothing, and the lock stays
// held. Prefer Lock and Hold.Release, which cannot make that mistake.
func ExampleMutex_Acquire() {
	client := connect()
	defer client.Close()
	m, err := zklock.NewMutex(client, "/examples/acquire")
	if err != nil {
		log.Fatal(err)
	}

	debit := func(ctx context.Context) error {
		ctx, err := m.Acquire(ctx) // ctx carries the hold: a re-entry
		if err != nil {
			return err
		}
		defer m.Release(ctx)
		fmt.Println("debit: held:", m.IsOwnedBy(ctx))
		return nil
	}
	transfer := func(ctx context.Context) error {
		ctx, err := m.Acquire(ctx) // a new hold
		if err != nil {
			return err
		}
		defer m.Release(ctx)
		if err := debit(ctx); err != nil {
			return err
		}
		fmt.Println("transfer: held after debit's release:", m.IsOwnedBy(ctx))
		return nil
	}
	if err := transfer(context.Background()); err != nil {
		log.Fatal(err)
	}
	fmt.Println("after transfer, held in this process:", m.IsAcquiredInThisProcess())

	// The mistake that Lock rules out: releasing with the context given to
	// Acquire, not the one it returned. Nothing is released, loudly.
	bg := context.Background()
	hctx, err := m.Acquire(bg)
	if err != nil {
		log.Fatal(err)
	}
	err = m.Release(bg) // wrong: bg carries no hold
	fmt.Println("wrong context:", errors.Is(err, zklock.ErrNotHeld), "still held:", m.IsOwnedBy(hctx))
	_ = m.Release(hctx)
	// Output:
	// debit: held: true
	// transfer: held after debit's release: true
	// after transfer, held in this process: false
	// wrong context: true still held: true
}

// Do locks, runs fn and releases. fn's context carries the hold and ends
// as soon as the caller's context or the hold ends.
func ExampleMutex_Do() {
	client := connect()
	defer client.Close()
	m, _ := zklock.NewMutex(client, "/examples/do")
	err := m.Do(context.Background(), func(ctx context.Context) error {
		fmt.Println("in the critical section, held:", m.IsOwnedBy(ctx))
		return nil
	})
	fmt.Println("err:", err)
	// Output:
	// in the critical section, held: true
	// err: <nil>
}

// Fencing: each holder's token is newer than the last holder's, and a
// write through Hold.Multi commits only while the hold exists. Here alice's
// lock node is deleted behind her back (as when her session expires),
// bob takes the lock, and alice's late write is refused.
func Example_fencing() {
	alice := connect()
	defer alice.Close()
	bob := connect()
	defer bob.Close()
	bg := context.Background()
	if _, err := bob.Create(bg, "/examples-fenced", nil, 0); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		log.Fatal(err)
	}
	defer bob.Delete(bg, "/examples-fenced", -1)
	write := func(value string) *zk.SetDataRequest {
		return &zk.SetDataRequest{Path: "/examples-fenced", Data: []byte(value), Version: -1}
	}

	ma, _ := zklock.NewMutex(alice, "/examples/fencing")
	ha, err := ma.Lock(bg)
	if err != nil {
		log.Fatal(err)
	}
	defer ha.Release()
	aliceToken, _ := ha.Token()
	_, err = ha.Multi(bg, write("alice"))
	fmt.Println("alice writes while she holds:", err)

	if err := bob.Delete(bg, ha.Path(), -1); err != nil { // alice's session expires, say
		log.Fatal(err)
	}
	mb, _ := zklock.NewMutex(bob, "/examples/fencing")
	hb, err := mb.Lock(bg)
	if err != nil {
		log.Fatal(err)
	}
	defer hb.Release()
	bobToken, _ := hb.Token()
	fmt.Println("bob's token is newer:", bobToken > aliceToken)
	_, err = hb.Multi(bg, write("bob"))
	fmt.Println("bob writes:", err)

	_, err = ha.Multi(bg, write("alice, late"))
	fmt.Println("alice's late write refused, lock lost:", errors.Is(err, zklock.ErrLockLost))
	data, _, _ := bob.Get(bg, "/examples-fenced")
	fmt.Printf("the data: %q\n", data)
	// Output:
	// alice writes while she holds: <nil>
	// bob's token is newer: true
	// bob writes: <nil>
	// alice's late write refused, lock lost: true
	// the data: "bob"
}

// Multi runs ops in one transaction behind a check of the hold's node, in
// the Client's namespace. Its errors tell apart a lost hold (ErrLockLost),
// a failed op (the op's own error, here zk.ErrNoNode) and a released Hold
// (ErrNotHeld); nothing is written in any of them.
func ExampleHold_Multi() {
	client := connect(zklock.WithNamespace("examples-multi"))
	defer client.Close()
	m, _ := zklock.NewMutex(client, "/locks/orders")
	bg := context.Background()
	hd, err := m.Lock(bg)
	if err != nil {
		log.Fatal(err)
	}
	defer hd.Release()

	res, err := hd.Multi(bg,
		&zk.CreateRequest{Path: "/order-1", Data: []byte("paid")},
		&zk.DeleteRequest{Path: "/order-1", Version: -1}) // the example leaves nothing behind
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("created:", res[0].String) // relative to the namespace

	_, err = hd.Multi(bg, &zk.SetDataRequest{Path: "/order-2", Data: []byte("paid"), Version: -1})
	fmt.Println("op failed:", errors.Is(err, zk.ErrNoNode), "lock lost:", errors.Is(err, zklock.ErrLockLost))

	_ = hd.Release()
	_, err = hd.Multi(bg, &zk.CreateRequest{Path: "/order-3"})
	fmt.Println("after release:", errors.Is(err, zklock.ErrNotHeld))
	// Output:
	// created: /order-1
	// op failed: true lock lost: false
	// after release: true
}

// Bind gives the context to do a hold's work under, such as an HTTP
// handler's: it ends when the client goes away and when the lock is lost,
// whichever comes first.
func ExampleHold_Bind() {
	client := connect()
	defer client.Close()
	m, _ := zklock.NewMutex(client, "/examples/bind")

	// serve is an HTTP handler that does work under the lock.
	serve := func(work func(ctx context.Context) error) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			hd, err := m.Lock(r.Context()) // the request's context bounds the wait
			if err != nil {
				http.Error(w, "busy", http.StatusServiceUnavailable)
				return
			}
			defer hd.Release()
			ctx, cancel := hd.Bind(r.Context())
			defer cancel()
			if err := work(ctx); err != nil {
				http.Error(w, "stopped", http.StatusServiceUnavailable)
				return
			}
			fmt.Fprint(w, "done")
		}
	}
	request := func(ctx context.Context, work func(ctx context.Context) error) {
		rec := httptest.NewRecorder()
		serve(work)(rec, httptest.NewRequest(http.MethodPost, "/orders", nil).WithContext(ctx))
		fmt.Println(rec.Code, strings.TrimSpace(rec.Body.String()))
	}

	// The work finishes.
	request(context.Background(), func(ctx context.Context) error { return nil })

	// The client goes away: the work's context ends with the request's.
	reqCtx, goAway := context.WithCancel(context.Background())
	request(reqCtx, func(ctx context.Context) error {
		goAway() // as the server does when the client disconnects
		<-ctx.Done()
		fmt.Println("work stopped:", context.Cause(ctx))
		return ctx.Err()
	})

	// The lock is lost: the work's context ends with the hold.
	request(context.Background(), func(ctx context.Context) error {
		// Someone deletes the lock node (on a context of its own: ctx ends
		// with the hold, perhaps before the delete's reply comes).
		if err := client.Delete(context.Background(), m.LockPath(ctx), -1); err != nil {
			return err
		}
		<-ctx.Done()
		fmt.Println("work stopped, lock lost:", errors.Is(context.Cause(ctx), zklock.ErrLockLost))
		return ctx.Err()
	})
	// Output:
	// 200 done
	// work stopped: context canceled
	// 503 stopped
	// work stopped, lock lost: true
	// 503 stopped
}

// NewSyncLocker adapts a lock to sync.Locker, for code that takes one. It
// cannot report errors or a lost hold; see NewSyncLocker for when that is
// acceptable.
func ExampleNewSyncLocker() {
	client := connect()
	defer client.Close()
	m, err := zklock.NewMutex(client, "/examples/sync-locker")
	if err != nil {
		log.Fatal(err)
	}
	var l sync.Locker = zklock.NewSyncLocker(m)

	// Each Lock is a participant of its own: the goroutines exclude each
	// other, as they would through a sync.Mutex.
	var (
		wg      sync.WaitGroup
		inside  atomic.Int32
		turns   atomic.Int32
		overlap atomic.Bool
	)
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.Lock()
			defer l.Unlock()
			if inside.Add(1) > 1 {
				overlap.Store(true)
			}
			turns.Add(1)
			inside.Add(-1)
		}()
	}
	wg.Wait()
	fmt.Println("turns:", turns.Load(), "overlap:", overlap.Load(), "held:", m.IsAcquiredInThisProcess())
	// Output:
	// turns: 3 overlap: false held: false
}

// Readers share the lock, a writer excludes them, a read holder cannot
// upgrade, and a write holder can downgrade: take the read lock with the
// write hold's context, then release the write lock.
func ExampleReadWriteLock() {
	client := connect()
	defer client.Close()
	rw, err := zklock.NewReadWriteLock(client, "/examples/rwlock")
	if err != nil {
		log.Fatal(err)
	}
	bg := context.Background()
	r1, err := rw.ReadLock().Lock(bg)
	if err != nil {
		log.Fatal(err)
	}
	defer r1.Release()
	r2, err := rw.ReadLock().Lock(bg) // another reader: shares the lock
	if err != nil {
		log.Fatal(err)
	}
	defer r2.Release()
	_, err = rw.WriteLock().TryLock(bg)
	fmt.Println("writer while two readers hold:", errors.Is(err, zklock.ErrLocked))
	_, err = rw.WriteLock().Lock(r1.Context())
	fmt.Println("upgrade refused:", errors.Is(err, zklock.ErrLockUpgrade))
	_ = r1.Release()
	_ = r2.Release()

	w, err := rw.WriteLock().Lock(bg)
	if err != nil {
		log.Fatal(err)
	}
	defer w.Release()
	// ... write ...
	r, err := rw.ReadLock().Lock(w.Context()) // granted at once: a downgrade
	if err != nil {
		log.Fatal(err)
	}
	defer r.Release()
	_ = w.Release()
	// ... read what was written; queued writers wait ...
	fmt.Println("after the downgrade: read held:", r.Err() == nil, "write held:", w.Err() == nil)
	// Output:
	// writer while two readers hold: true
	// upgrade refused: true
	// after the downgrade: read held: true write held: false
}

// A Semaphore hands out leases; AcquireN takes several at once, all or
// nothing. A Lease is a hold: Release it (any goroutine may), pass its
// Context down, guard writes with Hold().Multi.
func ExampleSemaphore() {
	client := connect()
	defer client.Close()
	sem, err := zklock.NewSemaphore(client, "/examples/semaphore", 3)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	lease, err := sem.Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer lease.Release()
	pair, err := sem.AcquireN(ctx, 2)
	if err != nil {
		log.Fatal(err)
	}
	defer sem.ReturnAll(pair)
	nodes, _ := sem.Participants(ctx)
	fmt.Println("leases in use:", len(nodes))

	// All three are taken: a bounded Acquire gives up, leaving nothing.
	tctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	_, err = sem.Acquire(tctx)
	cancel()
	fmt.Println("a fourth lease:", errors.Is(err, context.DeadlineExceeded))

	_ = lease.Release()
	<-lease.Context().Done() // ended once the lease is released or lost
	fmt.Println("lease ended:", lease.Err())
	_ = sem.ReturnAll(pair)
	nodes, _ = sem.Participants(ctx)
	fmt.Println("leases in use:", len(nodes))
	// Output:
	// leases in use: 3
	// a fourth lease: true
	// lease ended: zklock: lock released
	// leases in use: 0
}

// A SemaphoreMutex is not re-entrant: locking it again with the hold's
// context fails, where Curator's deadlocks.
func ExampleSemaphoreMutex() {
	client := connect()
	defer client.Close()
	sm, err := zklock.NewSemaphoreMutex(client, "/examples/semaphore-mutex")
	if err != nil {
		log.Fatal(err)
	}
	hd, err := sm.Lock(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	defer hd.Release()
	_, err = sm.Lock(hd.Context())
	fmt.Println("re-entry:", errors.Is(err, zklock.ErrNotReentrant))
	_, err = sm.TryLock(context.Background())
	fmt.Println("another context:", errors.Is(err, zklock.ErrLocked))

	err = hd.Release()
	fmt.Println("released:", err == nil, hd.Err())
	// Output:
	// re-entry: true
	// another context: true
	// released: true zklock: lock released
}

// A MultiLock takes several locks as one; NewMultiLockPaths takes them in
// sorted order whatever the order given, so two MultiLocks over the same
// paths never deadlock.
func ExampleNewMultiLockPaths() {
	client := connect()
	defer client.Close()
	ml, err := zklock.NewMultiLockPaths(client, "/examples/multi/b", "/examples/multi/a")
	if err != nil {
		log.Fatal(err)
	}
	hd, err := ml.Lock(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	defer hd.Release()
	a, _ := zklock.NewMutex(client, "/examples/multi/a")
	_, err = a.TryLock(context.Background())
	fmt.Println("a alone:", errors.Is(err, zklock.ErrLocked))

	fmt.Println("release:", hd.Release(), hd.Err())
	// Output:
	// a alone: true
	// release: <nil> zklock: lock released
}

// Revocation is cooperative: the holder makes its Mutex revocable, and
// releases when asked.
func ExampleRevoke() {
	alice := connect()
	defer alice.Close()
	bob := connect()
	defer bob.Close()

	ma, _ := zklock.NewMutex(alice, "/examples/revoke")
	holds := make(chan *zklock.Hold, 1)
	released := make(chan error, 1)
	ma.MakeRevocable(func(*zklock.Mutex) {
		released <- (<-holds).Release() // asked: release
	})
	hd, err := ma.Lock(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	defer hd.Release() // changes nothing once the callback has released
	holds <- hd

	mb, _ := zklock.NewMutex(bob, "/examples/revoke")
	nodes, _ := mb.Participants(context.Background())
	if err := zklock.Revoke(context.Background(), bob, nodes[0]); err != nil {
		log.Fatal(err)
	}
	select {
	case err := <-released:
		fmt.Println("alice released:", err, hd.Err())
	case <-time.After(10 * time.Second):
		log.Fatal("alice was not asked")
	}
	// Output:
	// alice released: <nil> zklock: lock released
}

// With a namespace, every node lives under it; paths that recipes and
// Hold.Multi take and return are relative to it, paths inside zk requests
// that you send yourself are full.
func ExampleWithNamespace() {
	client := connect(zklock.WithNamespace("billing"))
	defer client.Close()
	m, _ := zklock.NewMutex(client, "/locks/invoice")
	hd, err := m.Lock(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	defer hd.Release()
	check, _ := hd.CheckOp()
	fmt.Println(strings.HasPrefix(hd.Path(), "/locks/invoice/_c_"))
	fmt.Println(strings.HasPrefix(check.Path, "/billing/locks/invoice/_c_"))
	// Output:
	// true
	// true
}

// Listen reports every change of the connection state, the last one
// being Closed.
func ExampleClient_Listen() {
	client := connect()
	states := make(chan zklock.ConnectionState, 16)
	stop := client.Listen(func(s zklock.ConnectionState) { states <- s })
	defer stop()
	fmt.Println(<-states) // the current state comes first
	_ = client.Close()
	fmt.Println(<-states)
	// Output:
	// Connected
	// Closed
}

// A busy lock's error says who holds it: here a hold of the same Client
// whose Release was forgotten. errors.As reads the holder's node, data and
// age; errors.Is still sees ErrLocked.
func ExampleHolderError() {
	client := connect(zklock.WithNodeData([]byte("billing-worker-3")))
	defer client.Close()
	m, err := zklock.NewMutex(client, "/examples/holder")
	if err != nil {
		log.Fatal(err)
	}
	forgotten, err := m.Lock(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	defer forgotten.Release()

	_, err = m.TryLock(context.Background())
	var he *zklock.HolderError
	if errors.As(err, &he) {
		fmt.Println("busy:", errors.Is(err, zklock.ErrLocked))
		fmt.Println("holder:", string(he.Data))
		fmt.Println("this Client's own hold:", he.ThisClient)
	}
	// Output:
	// busy: true
	// holder: billing-worker-3
	// this Client's own hold: true
}

// Shutdown on SIGTERM: new acquires fail, waiters leave, and the holds
// that stand get until the deadline to be released by their owners.
func ExampleClient_Shutdown() {
	client := connect()
	m, err := zklock.NewMutex(client, "/examples/shutdown")
	if err != nil {
		log.Fatal(err)
	}
	hold, err := m.Lock(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	finished := make(chan struct{})
	go func() { // the job under the lock finishes its work, then releases
		defer close(finished)
		<-time.After(50 * time.Millisecond)
		hold.Release()
	}()

	// In main: signal.NotifyContext(ctx, syscall.SIGTERM), then on its end:
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	fmt.Println("shutdown:", client.Shutdown(ctx))
	<-finished
	_, err = m.Lock(context.Background())
	fmt.Println("afterwards:", errors.Is(err, zklock.ErrClosed))
	// Output:
	// shutdown: <nil>
	// afterwards: true
}

// A holder that gets stuck cannot block the lock for ever: the maximum
// hold time ends its hold as a loss, and the next participant is granted.
func ExampleWithMaxHold() {
	client := connect()
	defer client.Close()
	m, err := zklock.NewMutex(client, "/examples/maxhold", zklock.WithMaxHold(200*time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	hold, err := m.Lock(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	// ... the holder is stuck, and never releases ...
	<-hold.Done()
	fmt.Println("lost:", errors.Is(hold.Err(), zklock.ErrLockLost))
	fmt.Println("to its maximum hold time:", errors.Is(hold.Err(), zklock.ErrMaxHold))
	fmt.Println("release reports it:", errors.Is(hold.Release(), zklock.ErrMaxHold))
	// Output:
	// lost: true
	// to its maximum hold time: true
	// release reports it: true
}

// A Mutex per request, as a handler would make one: every Mutex of a
// Client and path is the same lock (a request's hold re-enters through
// another), and what makes an acquire alone cost a create and a delete is
// the Client's, so a fresh Mutex is as fast as a kept one.
func ExampleNewMutex_perRequest() {
	client := connect()
	defer client.Close()
	handle := func(ctx context.Context, job string) error {
		m, err := zklock.NewMutex(client, "/examples/jobs/"+job) // no I/O
		if err != nil {
			return err
		}
		return m.Do(ctx, func(ctx context.Context) error {
			// A helper that locks the same job again, with its own Mutex,
			// re-enters the caller's hold.
			again, err := zklock.NewMutex(client, "/examples/jobs/"+job)
			if err != nil {
				return err
			}
			return again.Do(ctx, func(context.Context) error { return nil })
		})
	}
	for range 3 {
		fmt.Println(handle(context.Background(), "42"))
	}
	// Output:
	// <nil>
	// <nil>
	// <nil>
}

// A Selector's leader fences its work with its term's Hold: Term gives it
// from the function's context, its Token grows from term to term, and
// Multi writes only while the term stands. EnsurePath makes the parent of
// the data written.
func ExampleSelector_Term() {
	client := connect()
	defer client.Close()
	bg := context.Background()
	if err := client.EnsurePath(bg, "/examples-nightly/report"); err != nil {
		log.Fatal(err)
	}
	defer client.Delete(bg, "/examples-nightly", -1)
	defer client.Delete(bg, "/examples-nightly/report", -1)
	defer client.Delete(bg, "/examples-nightly/report/last-run", -1)
	sel, err := zklock.NewSelector(client, "/examples/nightly", "scheduler-1")
	if err != nil {
		log.Fatal(err)
	}
	err = sel.Lead(bg, func(ctx context.Context) error {
		term, err := sel.Term(ctx)
		if err != nil {
			return err
		}
		token, err := term.Token() // hand it to storage that refuses older tokens
		if err != nil {
			return err
		}
		fmt.Println("leading, fencing token > 0:", token > 0)
		// Written only if this term still stands when the write commits.
		_, err = term.Multi(ctx, &zk.CreateRequest{Path: "/examples-nightly/report/last-run", Data: []byte("done")})
		return err
	})
	fmt.Println("term over:", err)
	data, _, _ := client.Get(bg, "/examples-nightly/report/last-run")
	fmt.Printf("written: %q\n", data)
	// Output:
	// leading, fencing token > 0: true
	// term over: <nil>
	// written: "done"
}

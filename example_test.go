package zklock_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strings"
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

func ExampleMutex_Acquire() {
	client, err := zklock.Connect(zkServers())
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	m, err := zklock.NewMutex(client, "/examples/acquire")
	if err != nil {
		log.Fatal(err)
	}
	ctx, err := m.Acquire(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("held:", m.IsOwnedBy(ctx))

	// Passing the hold's context down re-enters the lock.
	inner, err := m.Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	_ = m.Release(inner)
	fmt.Println("held after the inner release:", m.IsOwnedBy(ctx))

	_ = m.Release(ctx)
	fmt.Println("hold ended:", context.Cause(ctx))
	// Output:
	// held: true
	// held after the inner release: true
	// hold ended: zklock: lock released
}

func ExampleMutex_TryAcquire() {
	alice, err := zklock.Connect(zkServers())
	if err != nil {
		log.Fatal(err)
	}
	defer alice.Close()
	bob, err := zklock.Connect(zkServers())
	if err != nil {
		log.Fatal(err)
	}
	defer bob.Close()

	ma, _ := zklock.NewMutex(alice, "/examples/try")
	mb, _ := zklock.NewMutex(bob, "/examples/try")
	held, err := ma.Acquire(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	_, err = mb.TryAcquire(context.Background())
	fmt.Println("bob:", errors.Is(err, zklock.ErrLocked))
	_ = ma.Release(held)

	held, err = mb.TryAcquire(context.Background())
	fmt.Println("bob after alice released:", err == nil)
	_ = mb.Release(held)
	// Output:
	// bob: true
	// bob after alice released: true
}

// Fencing: a write guarded by the hold commits only while the hold exists.
func Example_fencing() {
	client, err := zklock.Connect(zkServers())
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	conn := client.Conn()
	if _, err := conn.Create("/examples-fenced", nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		log.Fatal(err)
	}
	defer conn.Delete("/examples-fenced", -1)

	m, _ := zklock.NewMutex(client, "/examples/fencing")
	ctx, err := m.Acquire(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	token, _ := m.Token(ctx) // monotonic: pass it to storage that rejects older tokens
	check, _ := m.CheckOp(ctx)
	write := &zk.SetDataRequest{Path: "/examples-fenced", Data: []byte(fmt.Sprint(token)), Version: -1}

	_, err = conn.Multi(check, write)
	fmt.Println("write while held:", err)
	_ = m.Release(ctx)
	_, err = conn.Multi(check, write)
	fmt.Println("write after release:", err)
	// Output:
	// write while held: <nil>
	// write after release: zk: node does not exist
}

func ExampleMutex_Do() {
	client, err := zklock.Connect(zkServers())
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	m, _ := zklock.NewMutex(client, "/examples/do")
	err = m.Do(context.Background(), func(ctx context.Context) error {
		fmt.Println("in the critical section")
		return nil
	})
	fmt.Println("err:", err)
	// Output:
	// in the critical section
	// err: <nil>
}

// connect returns a Client on the test binary's shared ZooKeeper.
func connect(opts ...zklock.Option) *zklock.Client {
	client, err := zklock.Connect(zkServers(), opts...)
	if err != nil {
		log.Fatal(err)
	}
	return client
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
	r1, _ := rw.ReadLock().Acquire(bg)
	r2, _ := rw.ReadLock().Acquire(bg) // another reader: shares the lock
	_, err = rw.WriteLock().TryAcquire(bg)
	fmt.Println("writer while two readers hold:", errors.Is(err, zklock.ErrLocked))
	_, err = rw.WriteLock().Acquire(r1)
	fmt.Println("upgrade refused:", errors.Is(err, zklock.ErrLockUpgrade))
	_ = rw.ReadLock().Release(r1)
	_ = rw.ReadLock().Release(r2)

	w, err := rw.WriteLock().Acquire(bg)
	if err != nil {
		log.Fatal(err)
	}
	// ... write ...
	r, err := rw.ReadLock().Acquire(w) // granted at once: a downgrade
	if err != nil {
		log.Fatal(err)
	}
	_ = rw.WriteLock().Release(w)
	// ... read what was written; queued writers wait ...
	fmt.Println("after the downgrade: read held:", rw.ReadLock().IsOwnedBy(r), "write held:", rw.WriteLock().IsOwnedBy(r))
	_ = rw.ReadLock().Release(r)
	// Output:
	// writer while two readers hold: true
	// upgrade refused: true
	// after the downgrade: read held: true write held: false
}

// A Semaphore hands out leases; AcquireN takes several at once, all or
// nothing. Any goroutine may release a lease.
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
	pair, err := sem.AcquireN(ctx, 2)
	if err != nil {
		log.Fatal(err)
	}
	nodes, _ := sem.Participants(ctx)
	fmt.Println("leases in use:", len(nodes))

	// All three are taken: a bounded Acquire gives up, leaving nothing.
	tctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	_, err = sem.Acquire(tctx)
	cancel()
	fmt.Println("a fourth lease:", errors.Is(err, context.DeadlineExceeded))

	_ = lease.Release()
	<-lease.Done() // closed once the lease is released or lost
	_ = sem.ReturnAll(pair)
	nodes, _ = sem.Participants(ctx)
	fmt.Println("leases in use:", len(nodes))
	// Output:
	// leases in use: 3
	// a fourth lease: true
	// leases in use: 0
}

// A SemaphoreMutex is not re-entrant, and any context may release it.
func ExampleSemaphoreMutex() {
	client := connect()
	defer client.Close()
	sm, err := zklock.NewSemaphoreMutex(client, "/examples/semaphore-mutex")
	if err != nil {
		log.Fatal(err)
	}
	held, err := sm.Acquire(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	_, err = sm.Acquire(held)
	fmt.Println("re-entry:", errors.Is(err, zklock.ErrNotReentrant))
	_, err = sm.TryAcquire(context.Background())
	fmt.Println("another context:", errors.Is(err, zklock.ErrLocked))

	err = sm.Release(context.Background()) // releases the newest hold
	fmt.Println("released:", err == nil, context.Cause(held))
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
	held, err := ml.Acquire(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	a, _ := zklock.NewMutex(client, "/examples/multi/a")
	_, err = a.TryAcquire(context.Background())
	fmt.Println("a alone:", errors.Is(err, zklock.ErrLocked))

	fmt.Println("release:", ml.Release(held), context.Cause(held))
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
	holds := make(chan context.Context, 1)
	released := make(chan error, 1)
	ma.MakeRevocable(func(m *zklock.Mutex) {
		released <- m.Release(<-holds) // asked: release
	})
	held, err := ma.Acquire(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	holds <- held

	mb, _ := zklock.NewMutex(bob, "/examples/revoke")
	nodes, _ := mb.Participants(context.Background())
	if err := zklock.Revoke(context.Background(), bob, nodes[0]); err != nil {
		log.Fatal(err)
	}
	select {
	case err := <-released:
		fmt.Println("alice released:", err, context.Cause(held))
	case <-time.After(10 * time.Second):
		log.Fatal("alice was not asked")
	}
	// Output:
	// alice released: <nil> zklock: lock released
}

// With a namespace, every node lives under it; paths that recipes return
// are relative to it, paths inside zk requests are full.
func ExampleWithNamespace() {
	client := connect(zklock.WithNamespace("billing"))
	defer client.Close()
	m, _ := zklock.NewMutex(client, "/locks/invoice")
	held, err := m.Acquire(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	defer m.Release(held)
	check, _ := m.CheckOp(held)
	fmt.Println(strings.HasPrefix(m.LockPath(held), "/locks/invoice/_c_"))
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
	_ = client.Close()
	fmt.Println(<-states)
	// Output:
	// Closed
}

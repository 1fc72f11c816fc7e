package zklock_test

import (
	"context"
	"errors"
	"fmt"
	"log"

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

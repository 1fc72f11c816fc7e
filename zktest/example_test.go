package zktest_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/zklock/zklock"
	"github.com/zklock/zklock/zktest"
)

// A server of the program's own, for a lock: Start it, Connect to its
// Servers, and Close it at the end (StartT does that for a test).
func ExampleStart() {
	ctx := context.Background()
	cluster, err := zktest.Start(ctx, zktest.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cluster.Close()

	c, err := zklock.Connect(cluster.Servers())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	m, err := zklock.NewMutex(c, "/example/job")
	if err != nil {
		fmt.Println(err)
		return
	}
	hold, err := m.Lock(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("locked")
	fmt.Println("released:", hold.Release())
	// Output:
	// locked
	// released: <nil>
}

// A fault on one client's connection, outside a test: the Link's
// ExpireSession ends the client's session on the spot and tells the
// client so, as Curator's KillSession does, and the hold it had is lost
// with its session. In a test, NewLink gives the Link and closes it.
func ExampleOpenLink() {
	ctx := context.Background()
	cluster, err := zktest.Start(ctx, zktest.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cluster.Close()
	link, err := zktest.OpenLink(cluster.Servers())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer link.Close()

	c, err := zklock.Connect(cluster.Servers(), zklock.WithDialer(link.Dial))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	m, err := zklock.NewMutex(c, "/example/job")
	if err != nil {
		fmt.Println(err)
		return
	}
	hold, err := m.Lock(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := link.ExpireSession(ctx); err != nil {
		fmt.Println(err)
		return
	}
	<-hold.Done()
	fmt.Println("lost:", errors.Is(hold.Err(), zklock.ErrLockLost))
	fmt.Println(hold.Err())
	fmt.Println("release says so too:", errors.Is(hold.Release(), zklock.ErrLockLost))
	// Output:
	// lost: true
	// zklock: lock /example/job: lock lost: session lost
	// release says so too: true
}

package zktest_test

import (
	"context"
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

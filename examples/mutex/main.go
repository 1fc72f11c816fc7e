// Command mutex shows two ZooKeeper sessions taking turns on one zklock
// Mutex.
//
// It connects to the ZooKeeper servers -zk names (host:port,...), by
// default those in ZK_SERVERS, else 127.0.0.1:2181, where `zklock dev`
// serves one:
//
//	go run ./examples/mutex [-zk host:port,...]
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zklock/zklock"
)

func main() {
	servers := flag.String("zk", cmp.Or(os.Getenv("ZK_SERVERS"), "127.0.0.1:2181"),
		"ZooKeeper servers, host:port,... (ZK_SERVERS if set)")
	flag.Parse()
	err := run(context.Background(), os.Stdout, []string{*servers})
	if errors.Is(err, zk.ErrNoServer) {
		err = fmt.Errorf("cannot reach ZooKeeper at %s (start one with `zklock dev`, or name yours with -zk or ZK_SERVERS): %w", *servers, err)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mutex:", err)
		os.Exit(1)
	}
}

// run lets alice and bob, each a session of its own, take the lock three
// times each, and fails if both were ever inside at once.
func run(ctx context.Context, out io.Writer, servers []string) error {
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex // serialises printing
		inside  atomic.Int32
		overlap atomic.Bool
		errs    = make([]error, 2)
	)
	for i, name := range []string{"alice", "bob"} {
		// Each worker is its own session, as two processes would be.
		client, err := zklock.Connect(servers, zklock.WithSessionTimeout(10*time.Second))
		if err != nil {
			return err
		}
		defer client.Close()
		m, err := zklock.NewMutex(client, "/examples/mutex")
		if err != nil {
			return err
		}
		say := func(format string, args ...any) {
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprintf(out, "%-5s "+format+"\n", append([]any{name}, args...)...)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for turn := 1; turn <= 3 && errs[i] == nil; turn++ {
				errs[i] = takeTurn(ctx, m, func(token int64) {
					if inside.Add(1) > 1 {
						overlap.Store(true)
					}
					defer inside.Add(-1)
					say("holds the lock (turn %d, fencing token %d)", turn, token)
					time.Sleep(100 * time.Millisecond) // the critical section
					say("releases")
				})
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if overlap.Load() {
		return errors.New("VIOLATED: both sessions were inside the lock at once")
	}
	fmt.Fprintln(out, "done: the two sessions took turns, never both inside")
	return nil
}

// takeTurn holds m while work runs, and passes work the hold's fencing
// token. The deferred Release goes through the Hold, so it cannot pick the
// wrong context; its error (ErrLockLost if the hold was lost meanwhile) is
// returned with the rest.
func takeTurn(ctx context.Context, m *zklock.Mutex, work func(token int64)) (err error) {
	hd, err := m.Lock(ctx)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, hd.Release()) }()
	token, err := hd.Token()
	if err != nil {
		return err
	}
	work(token)
	return nil
}

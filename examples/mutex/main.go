// Command mutex shows two ZooKeeper sessions taking turns on one zklock
// Mutex. It uses the ensemble in ZK_SERVERS (comma-separated host:port), or
// starts a throwaway ZooKeeper server when ZK_SERVERS is unset.
//
//	go run ./examples/mutex
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zklock/zklock"
	"github.com/zklock/zklock/internal/exampleenv"
)

func main() { exampleenv.Main(run) }

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
				errs[i] = m.Do(ctx, func(ctx context.Context) error {
					if inside.Add(1) > 1 {
						overlap.Store(true)
					}
					defer inside.Add(-1)
					token, err := m.Token(ctx)
					if err != nil {
						return err
					}
					say("holds the lock (turn %d, fencing token %d)", turn, token)
					time.Sleep(100 * time.Millisecond) // the critical section
					say("releases")
					return nil
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

// Command election shows three ZooKeeper sessions electing a leader with
// a zklock Election (Curator's LeaderLatch layout). Each leader writes
// with its fencing token, then resigns, and the next in line leads; an
// observer reports every change, including the moment with no leader.
//
// It connects to the ZooKeeper servers -zk names (host:port,...), by
// default those in ZK_SERVERS, else 127.0.0.1:2181, where `zklock dev`
// serves one:
//
//	go run ./examples/election [-zk host:port,...]
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
		fmt.Fprintln(os.Stderr, "election:", err)
		os.Exit(1)
	}
}

const electionPath = "/examples/election"

// run lets three nodes campaign; each leads once, in turn. It fails if two
// ever led at once or a fencing token did not grow.
func run(ctx context.Context, out io.Writer, servers []string) error {
	var (
		mu      sync.Mutex // serialises printing and lastToken
		last    int64      // the newest fencing token a leader used
		leaders atomic.Int32
		bad     atomic.Bool
	)
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(out, format+"\n", args...)
	}
	observed, stopObserving, err := observe(ctx, servers, say)
	if err != nil {
		return err
	}
	names := []string{"node-1", "node-2", "node-3"}
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		client, err := zklock.Connect(servers, zklock.WithSessionTimeout(10*time.Second))
		if err != nil {
			return err
		}
		defer client.Close()
		el, err := zklock.NewElection(client, electionPath, name)
		if err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = lead(ctx, el, func(token int64) {
				if leaders.Add(1) > 1 {
					bad.Store(true)
				}
				defer leaders.Add(-1)
				mu.Lock()
				if token <= last {
					bad.Store(true)
				}
				last = token
				mu.Unlock()
				say("%s leads (fencing token %d)", name, token)
				time.Sleep(100 * time.Millisecond) // the leader's work
				say("%s resigns", name)
			})
		}()
	}
	wg.Wait()
	stopObserving()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if bad.Load() {
		return errors.New("VIOLATED: two leaders at once, or a fencing token that did not grow")
	}
	say("observer saw %d changes of leader", <-observed)
	fmt.Fprintln(out, "done: three nodes led in turn, one at a time")
	return nil
}

// lead campaigns until el leads, runs work with the leadership's fencing
// token, and resigns. Work that takes long should watch hd.Done(): the
// leadership can be lost at any time.
func lead(ctx context.Context, el *zklock.Election, work func(token int64)) (err error) {
	hd, err := el.Campaign(ctx)
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

// observe follows the election from a session of its own until stop is
// called; the channel then yields how many changes it saw.
func observe(ctx context.Context, servers []string, say func(string, ...any)) (<-chan int, func(), error) {
	client, err := zklock.Connect(servers)
	if err != nil {
		return nil, nil, err
	}
	el, err := zklock.NewElection(client, electionPath, "observer")
	if err != nil {
		client.Close()
		return nil, nil, err
	}
	octx, cancel := context.WithCancel(ctx)
	changes := el.Observe(octx)
	n := make(chan int, 1)
	go func() {
		count := 0
		for l := range changes { // closed when octx ends
			switch {
			case l.Err != nil:
				say("observer: %v", l.Err)
			case l.Node == "":
				say("observer: no leader")
			default:
				count++
				say("observer: leader is %s", l.ID)
			}
		}
		n <- count
	}()
	return n, func() { cancel(); client.Close() }, nil
}

// Command semaphore limits concurrent calls to a slow service with a
// zklock Semaphore: 12 callers over 4 sessions share 3 leases, and the
// fake service, which counts the callers inside it, never sees more than 3
// at once.
//
// It connects to the ZooKeeper servers -zk names (host:port,...), by
// default those in ZK_SERVERS, else 127.0.0.1:2181, where `zklock dev`
// serves one:
//
//	go run ./examples/semaphore [-zk host:port,...]
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zklock/zklock"
)

const (
	semPath  = "/examples/semaphore"
	limit    = 3  // leases: concurrent calls allowed
	callers  = 12 // one call each
	sessions = 4  // callers are spread over this many sessions
	callTime = 50 * time.Millisecond
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
		fmt.Fprintln(os.Stderr, "semaphore:", err)
		os.Exit(1)
	}
}

// service is the slow service: it counts the callers inside it and keeps
// the highest count.
type service struct {
	mu     sync.Mutex // protects the fields below and serialises printing
	out    io.Writer
	inside int
	max    int
	calls  int
}

// call serves caller for callTime.
func (s *service) call(caller, session int, lease string) {
	s.mu.Lock()
	s.inside++
	s.calls++
	s.max = max(s.max, s.inside)
	fmt.Fprintf(s.out, "caller %2d (session %d) enters with lease %s: %d inside\n", caller, session, lease, s.inside)
	s.mu.Unlock()
	time.Sleep(callTime) // the slow work
	s.mu.Lock()
	s.inside--
	s.mu.Unlock()
}

// run lets every caller call the service under a lease, and fails if the
// service ever saw more than limit callers at once.
func run(ctx context.Context, out io.Writer, servers []string) error {
	admin, err := zklock.Connect(servers)
	if err != nil {
		return err
	}
	defer admin.Close()
	defer cleanup(admin, semPath) // after the sessions close
	sems := make([]*zklock.Semaphore, sessions)
	for i := range sems {
		c, err := zklock.Connect(servers, zklock.WithSessionTimeout(10*time.Second))
		if err != nil {
			return err
		}
		defer c.Close()
		if sems[i], err = zklock.NewSemaphore(c, semPath, limit); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "%d callers over %d sessions, at most %d calls at once\n", callers, sessions, limit)
	svc := &service{out: out}
	errs := make([]error, callers)
	var wg sync.WaitGroup
	for caller := range callers {
		session := caller % sessions
		wg.Add(1)
		go func() {
			defer wg.Done()
			lease, err := sems[session].Acquire(ctx)
			if err != nil {
				errs[caller] = err
				return
			}
			defer func() { errs[caller] = lease.Release() }()
			svc.call(caller+1, session+1, shortName(lease.Node()))
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	left, err := sems[0].Participants(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%d calls served; max concurrency = %d ≤ limit %d; leases left: %d\n", svc.calls, svc.max, limit, len(left))
	if svc.max > limit {
		return fmt.Errorf("VIOLATED: %d callers were inside at once, limit %d", svc.max, limit)
	}
	return nil
}

// shortName drops the protection prefix "_c_<uuid>-" from a node name.
func shortName(node string) string {
	const prefix = len("_c_") + 36 + 1
	if len(node) > prefix {
		return node[prefix:]
	}
	return node
}

// cleanup deletes tree and everything under it, then each ancestor of
// tree that is left empty, so that the example leaves nothing behind. It
// runs after the example's context may have ended: it has a bound of its
// own.
func cleanup(c *zklock.Client, tree string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := deleteTree(ctx, c, tree); err != nil {
		return err
	}
	for p := path.Dir(tree); p != "/"; p = path.Dir(p) {
		err := c.Delete(ctx, p, -1)
		if errors.Is(err, zk.ErrNotEmpty) {
			return nil
		}
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
	}
	return nil
}

// deleteTree deletes p and everything under it.
func deleteTree(ctx context.Context, c *zklock.Client, p string) error {
	children, _, err := c.Children(ctx, p)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, child := range children {
		if err := deleteTree(ctx, c, path.Join(p, child)); err != nil {
			return err
		}
	}
	if err := c.Delete(ctx, p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	return nil
}

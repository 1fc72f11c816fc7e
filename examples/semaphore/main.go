// Command semaphore limits concurrent calls to a slow service with a
// zklock Semaphore: 12 callers over 4 sessions share 3 leases, and the
// fake service, which counts the callers inside it, never sees more than 3
// at once.
//
// It uses the ensemble in ZK_SERVERS (comma-separated host:port), or starts
// a throwaway ZooKeeper server when ZK_SERVERS is unset.
//
//	go run ./examples/semaphore
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/zklock/zklock"
	"github.com/zklock/zklock/internal/exampleenv"
)

const (
	semPath  = "/examples/semaphore"
	limit    = 3  // leases: concurrent calls allowed
	callers  = 12 // one call each
	sessions = 4  // callers are spread over this many sessions
	callTime = 50 * time.Millisecond
)

func main() { exampleenv.Main(run) }

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
	defer exampleenv.Cleanup(admin.Conn(), semPath) // after the sessions close
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

// Command revoke shows cooperative revocation: alice holds a zklock Mutex
// she made revocable; bob, in another session, finds her lock node among
// the participants and asks her to release it with zklock.Revoke (the
// same request as Curator's Revoker.attemptRevoke); alice's callback runs,
// she finishes up and releases, and bob gets the lock.
//
// It connects to the ZooKeeper servers -zk names (host:port,...), by
// default those in ZK_SERVERS, else 127.0.0.1:2181, where `zklock dev`
// serves one:
//
//	go run ./examples/revoke [-zk host:port,...]
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
	root     = "/examples/revoke"
	lockPath = root + "/lock"
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
		fmt.Fprintln(os.Stderr, "revoke:", err)
		os.Exit(1)
	}
}

// story prints numbered events, in the order they happen.
type story struct {
	mu  sync.Mutex // protects n and serialises printing
	out io.Writer
	n   int
}

func (s *story) say(who, format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	fmt.Fprintf(s.out, "%d. %-5s %s\n", s.n, who, fmt.Sprintf(format, args...))
}

// run plays the story and fails if bob does not get the lock after
// alice's release.
func run(ctx context.Context, out io.Writer, servers []string) error {
	admin, err := zklock.Connect(servers)
	if err != nil {
		return err
	}
	defer admin.Close()
	defer cleanup(admin, root) // after the sessions close
	alice, err := newMutex(servers)
	if err != nil {
		return err
	}
	defer alice.c.Close()
	bob, err := newMutex(servers)
	if err != nil {
		return err
	}
	defer bob.c.Close()

	s := &story{out: out}
	hold, aliceDone, err := aliceHolds(ctx, s, alice)
	if err != nil {
		return err
	}
	err = bobRevokes(ctx, s, bob)
	if err != nil {
		_ = hold.Release() // alice was never asked: end her wait
	}
	aerr := <-aliceDone
	if err := errors.Join(err, aerr); err != nil {
		return err
	}
	s.say("alice", "sees her hold's context ended: %v", context.Cause(hold.Context()))
	if !errors.Is(hold.Err(), zklock.ErrReleased) {
		return errors.New("VIOLATED: alice's hold did not end by her release")
	}
	return nil
}

// session is one participant: a session of its own and the Mutex on it.
type session struct {
	c *zklock.Client
	m *zklock.Mutex
}

func newMutex(servers []string) (*session, error) {
	c, err := zklock.Connect(servers, zklock.WithSessionTimeout(10*time.Second))
	if err != nil {
		return nil, err
	}
	m, err := zklock.NewMutex(c, lockPath)
	if err != nil {
		c.Close()
		return nil, err
	}
	return &session{c, m}, nil
}

// aliceHolds makes alice's Mutex revocable and locks it. When asked to
// release, alice finishes her work and releases her Hold; the returned
// channel gives the outcome.
func aliceHolds(ctx context.Context, s *story, alice *session) (*zklock.Hold, <-chan error, error) {
	asked := make(chan struct{}, 1)
	alice.m.MakeRevocable(func(*zklock.Mutex) {
		select {
		case asked <- struct{}{}:
		default: // already asked
		}
	})
	hold, err := alice.m.Lock(ctx)
	if err != nil {
		return nil, nil, err
	}
	s.say("alice", "holds the lock, revocable, with node %s", hold.Path())
	done := make(chan error, 1)
	go func() {
		select {
		case <-asked:
		case <-hold.Done():
			done <- fmt.Errorf("alice's hold ended before she was asked: %w", hold.Err())
			return
		}
		s.say("alice", "is asked to release: finishes her work and releases")
		done <- hold.Release()
	}()
	return hold, done, nil
}

// bobRevokes finds that the lock is taken, asks its holder to release it,
// and waits for the lock.
func bobRevokes(ctx context.Context, s *story, bob *session) (err error) {
	if hd, err := bob.m.TryLock(ctx); !errors.Is(err, zklock.ErrLocked) {
		if err == nil {
			_ = hd.Release()
		}
		return fmt.Errorf("bob's TryLock: want ErrLocked, got %v", err)
	}
	nodes, err := bob.m.Participants(ctx)
	if err != nil {
		return err
	}
	if len(nodes) != 1 {
		return fmt.Errorf("want one participant, got %v", nodes)
	}
	s.say("bob", "finds the lock taken (ErrLocked); asks the holder of %s to release, and waits", nodes[0])
	if err := zklock.Revoke(ctx, bob.c, nodes[0]); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	hold, err := bob.m.Lock(ctx)
	if err != nil {
		return fmt.Errorf("VIOLATED: bob did not get the lock after the revocation: %w", err)
	}
	defer func() { err = errors.Join(err, hold.Release()) }()
	s.say("bob", "holds the lock, with node %s", hold.Path())
	return nil
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

// Command fencing shows why a lock holder must fence its writes. Alice
// holds a zklock Mutex and writes to a store; then her process stalls (a
// long GC pause, say: here a proxy holds all her traffic) for longer than
// her session timeout. ZooKeeper expires her session, deletes her lock
// node, and bob acquires the lock. When alice wakes up, she does not know
// yet and writes again: both of her stale writes are rejected, one by a
// guarded transaction (Hold.Multi: a check of her lock node, then the
// write; her lock node is gone), one by the store, which refuses a fencing
// token (Hold.Token) older than the last it accepted.
//
// It connects to the ZooKeeper servers -zk names (host:port,...), by
// default those in ZK_SERVERS, else 127.0.0.1:2181, where `zklock dev`
// serves one:
//
//	go run ./examples/fencing [-zk host:port,...]
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
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zklock/zklock"
	"github.com/zklock/zklock/zktest"
)

const (
	root           = "/examples/fencing"
	lockPath       = root + "/lock"
	storePath      = root + "/store" // data: "<token> <value>"
	aliceTimeout   = 2 * time.Second // alice's session timeout
	exampleTimeout = 30 * time.Second
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
		fmt.Fprintln(os.Stderr, "fencing:", err)
		os.Exit(1)
	}
}

// run plays the story, and fails if a stale write of alice's is accepted.
func run(ctx context.Context, out io.Writer, servers []string) error {
	ctx, cancel := context.WithTimeout(ctx, exampleTimeout)
	defer cancel()
	admin, err := zklock.Connect(servers)
	if err != nil {
		return err
	}
	defer admin.Close()
	defer cleanup(admin, root) // after the sessions close
	if err := put(ctx, admin, storePath, "0 empty"); err != nil {
		return err
	}
	link, err := zktest.OpenLink(servers)
	if err != nil {
		return err
	}
	defer link.Close() // after alice's session closes
	alice, err := newSession(servers, zklock.WithSessionTimeout(aliceTimeout),
		zklock.WithDialer(link.Dial))
	if err != nil {
		return err
	}
	defer alice.c.Close()
	defer link.Resume() // before alice's session closes
	bob, err := newSession(servers, zklock.WithSessionTimeout(10*time.Second))
	if err != nil {
		return err
	}
	defer bob.c.Close()
	return play(ctx, out, alice, bob, link)
}

// session is one participant: a session of its own and the Mutex on it.
type session struct {
	c      *zklock.Client
	m      *zklock.Mutex
	states chan zklock.ConnectionState // every state change, for waiting on
}

func newSession(servers []string, opts ...zklock.Option) (*session, error) {
	c, err := zklock.Connect(servers, opts...)
	if err != nil {
		return nil, err
	}
	m, err := zklock.NewMutex(c, lockPath)
	if err != nil {
		c.Close()
		return nil, err
	}
	s := &session{c: c, m: m, states: make(chan zklock.ConnectionState, 64)}
	c.Listen(func(st zklock.ConnectionState) {
		select {
		case s.states <- st:
		default: // nobody is waiting for so many
		}
	})
	return s, nil
}

// play runs the story once the sessions exist.
func play(ctx context.Context, out io.Writer, alice, bob *session, link *zktest.Link) error {
	aliceHold, err := alice.m.Lock(ctx)
	if err != nil {
		return err
	}
	defer aliceHold.Release() // on an early return; the story releases below, which makes this a no-op
	aliceToken, err := aliceHold.Token()
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "alice: holds the lock, fencing token %d\n", aliceToken)
	if err := report(out, "alice", fencedWrite(ctx, alice.c, aliceToken, "alice-1")); err != nil {
		return err
	}

	fmt.Fprintf(out, "alice: stalls (all her traffic held) for longer than her %v session timeout\n", aliceTimeout)
	link.Pause()
	bobHold, err := bob.m.Lock(ctx) // granted once alice's session expires
	if err != nil {
		return err
	}
	defer bobHold.Release() // on an early return; a no-op after the release below
	bobToken, err := bobHold.Token()
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "bob:   holds the lock once alice's session expired, fencing token %d\n", bobToken)
	if err := report(out, "bob", fencedWrite(ctx, bob.c, bobToken, "bob-1")); err != nil {
		return err
	}

	link.Resume()
	if err := awaitNewSession(ctx, alice); err != nil {
		return err
	}
	fmt.Fprintln(out, "alice: wakes up and, not having looked at her hold, writes again:")
	if err := staleWrites(ctx, out, alice, aliceHold, aliceToken); err != nil {
		return err
	}
	fmt.Fprintf(out, "alice: her hold's context says: lost=%t\n", errors.Is(context.Cause(aliceHold.Context()), zklock.ErrLockLost))
	if err := aliceHold.Release(); !errors.Is(err, zklock.ErrLockLost) {
		return fmt.Errorf("alice's release: want ErrLockLost, got %v", err)
	}
	return errors.Join(bobHold.Release(), printStore(ctx, out, bob.c))
}

// staleWrites makes alice's two late writes and fails if either is
// accepted. The guarded write is refused with ErrLockLost: by the server,
// whose check of her lock node fails, or already by her Client, if it has
// noticed the loss meanwhile.
func staleWrites(ctx context.Context, out io.Writer, alice *session, hold *zklock.Hold, token int64) error {
	_, err := hold.Multi(ctx, &zk.SetDataRequest{Path: storePath, Data: []byte("? alice-2"), Version: -1})
	if err == nil {
		return errors.New("VIOLATED: alice's guarded write committed after she lost the lock")
	}
	if !errors.Is(err, zklock.ErrLockLost) {
		return fmt.Errorf("alice's guarded write: want ErrLockLost, got %w", err)
	}
	fmt.Fprintf(out, "alice: guarded write (Hold.Multi: check on her lock node + set) REJECTED, lock lost: %v\n", err)
	err = fencedWrite(ctx, alice.c, token, "alice-2")
	if !errors.Is(err, errStale) {
		return fmt.Errorf("VIOLATED: alice's write with token %d: want a rejection, got %v", token, err)
	}
	return report(out, "alice", err)
}

// awaitNewSession waits until s's Client has its session back after
// losing it: the server expired it, so her Client made a new one.
func awaitNewSession(ctx context.Context, s *session) error {
	lost := false
	for {
		select {
		case st := <-s.states:
			lost = lost || st == zklock.StateLost
			if lost && st == zklock.StateReconnected {
				return nil
			}
		case <-ctx.Done():
			return fmt.Errorf("alice's session did not come back: %w", ctx.Err())
		}
	}
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

// put sets the node at p to value, creating it, and its missing
// ancestors through Client.EnsurePath, if needed.
func put(ctx context.Context, c *zklock.Client, p, value string) error {
	_, err := c.Set(ctx, p, []byte(value), -1)
	if !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	if err := c.EnsurePath(ctx, path.Dir(p)); err != nil {
		return err
	}
	_, err = c.Create(ctx, p, []byte(value), 0)
	return err
}

// Command rwlock is a configuration cache on a zklock ReadWriteLock: a
// configuration of two keys that must always match, kept in ZooKeeper,
// read by many readers (several sessions) and updated by one writer that
// writes the two keys one after the other, slowly.
//
// The writer takes the write lock, updates both keys, then downgrades, as
// Curator allows: it takes the read lock while holding the write lock and
// releases the write lock, so it reads back what it wrote and no writer can
// come in between. Readers hold the read lock while they read both keys,
// so none ever sees a half-written configuration.
//
// It connects to the ZooKeeper servers -zk names (host:port,...), by
// default those in ZK_SERVERS, else 127.0.0.1:2181, where `zklock dev`
// serves one:
//
//	go run ./examples/rwlock [-zk host:port,...]
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
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zklock/zklock"
)

const (
	root     = "/examples/rwlock"
	lockPath = root + "/lock"     // only lock nodes live under a lock path
	keyA     = root + "/config/a" // the two keys that must match
	keyB     = root + "/config/b"
	readers  = 4                     // reader sessions
	versions = 5                     // configurations the writer publishes
	halfway  = 20 * time.Millisecond // between the writer's two writes
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
		fmt.Fprintln(os.Stderr, "rwlock:", err)
		os.Exit(1)
	}
}

// run publishes the configurations while the readers read, and fails if a
// reader or the writer ever saw keys that do not match.
func run(ctx context.Context, out io.Writer, servers []string) error {
	admin, err := zklock.Connect(servers)
	if err != nil {
		return err
	}
	defer admin.Close()
	defer cleanup(admin, root)
	if err := setConfig(ctx, admin, "v0"); err != nil {
		return err
	}
	stop := make(chan struct{})
	var reads, torn atomic.Int64
	var wg sync.WaitGroup
	readerErrs := make([]error, readers)
	for i := range readers {
		s, err := newSession(servers)
		if err != nil {
			close(stop)
			wg.Wait()
			return err
		}
		defer s.c.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			readerErrs[i] = s.readLoop(ctx, stop, &reads, &torn)
		}()
	}
	werr := writer(ctx, out, servers)
	close(stop)
	wg.Wait()
	if err := errors.Join(append(readerErrs, werr)...); err != nil {
		return err
	}
	fmt.Fprintf(out, "readers: %d sessions made %d reads; %d saw a half-written config\n", readers, reads.Load(), torn.Load())
	if torn.Load() > 0 {
		return fmt.Errorf("VIOLATED: %d reads saw a half-written config", torn.Load())
	}
	return nil
}

// session is one participant: a session of its own, as a process would
// have, and the lock on it.
type session struct {
	c  *zklock.Client
	rw *zklock.ReadWriteLock
}

// newSession opens a session and makes the lock on it; the caller closes
// s.c.
func newSession(servers []string) (*session, error) {
	c, err := zklock.Connect(servers, zklock.WithSessionTimeout(10*time.Second))
	if err != nil {
		return nil, err
	}
	rw, err := zklock.NewReadWriteLock(c, lockPath)
	if err != nil {
		c.Close()
		return nil, err
	}
	return &session{c: c, rw: rw}, nil
}

// readLoop reads the configuration under the read lock until stop is
// closed, counting reads and reads whose keys differ.
func (s *session) readLoop(ctx context.Context, stop <-chan struct{}, reads, torn *atomic.Int64) error {
	for {
		select {
		case <-stop:
			return nil
		default:
		}
		err := s.rw.ReadLock().Do(ctx, func(hctx context.Context) error {
			a, b, err := getConfig(hctx, s.c)
			if err != nil {
				return err
			}
			reads.Add(1)
			if a != b {
				torn.Add(1)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
}

// writer publishes versions v1..vN, each under the write lock, and reads
// each back after downgrading to the read lock.
func writer(ctx context.Context, out io.Writer, servers []string) error {
	s, err := newSession(servers)
	if err != nil {
		return err
	}
	defer s.c.Close()
	for v := 1; v <= versions; v++ {
		if err := s.publish(ctx, out, fmt.Sprintf("v%d", v)); err != nil {
			return err
		}
	}
	return nil
}

// publish writes version under the write lock, downgrades, and reads it
// back under the read lock. Each Hold is released below, explicitly, so
// that its error is returned; the deferred Releases only cover an early
// return or a panic (a second Release of a Hold changes nothing).
func (s *session) publish(ctx context.Context, out io.Writer, version string) error {
	rw := s.rw
	w, err := rw.WriteLock().Lock(ctx)
	if err != nil {
		return err
	}
	defer w.Release()
	// The two keys are written one after the other: a reader that did not
	// hold the read lock could see a new a with an old b in between.
	if err := setConfig(ctx, s.c, version); err != nil {
		return errors.Join(err, w.Release())
	}
	// Downgrade: the read lock is granted at once to the context that
	// holds the write lock; then the write lock is released.
	r, err := rw.ReadLock().Lock(w.Context())
	if err != nil {
		return errors.Join(err, w.Release())
	}
	defer r.Release()
	werr := w.Release()
	a, b, err := getConfig(ctx, s.c)
	fmt.Fprintf(out, "writer: wrote %s under the write lock, downgraded, read back a=%s b=%s\n", version, a, b)
	err = errors.Join(werr, err, r.Release())
	if err == nil && (a != version || b != version) {
		err = fmt.Errorf("VIOLATED: wrote %s, read back a=%s b=%s", version, a, b)
	}
	return err
}

// setConfig writes version into both keys, one after the other, creating
// them if needed.
func setConfig(ctx context.Context, c *zklock.Client, version string) error {
	for i, key := range []string{keyA, keyB} {
		if i == 1 {
			time.Sleep(halfway) // a slow writer: the window a lock must cover
		}
		if err := put(ctx, c, key, version); err != nil {
			return err
		}
	}
	return nil
}

// getConfig reads both keys.
func getConfig(ctx context.Context, c *zklock.Client) (a, b string, err error) {
	da, _, err := c.Get(ctx, keyA)
	if err != nil {
		return "", "", err
	}
	db, _, err := c.Get(ctx, keyB)
	return string(da), string(db), err
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

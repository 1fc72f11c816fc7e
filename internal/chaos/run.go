package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklock/zklock"
	"github.com/zklock/zklock/internal/zktest"
)

// config sets up a chaos run.
type config struct {
	seed      uint64
	duration  time.Duration // how long the workers contend under faults
	sessions  int           // client sessions, each behind its own proxy
	timeout   time.Duration // their session timeout
	maxLeases int           // the semaphore's
	maxHold   time.Duration // longest short critical section
	longEvery int           // in sessions 1 and 2 of every 4, one section in longEvery lasts one to two timeouts (0: none)
	calm      time.Duration // longest quiet time between faults
	noFaults  bool          // contend without faults
	only      []faultKind   // inject only these kinds; nil: every kind
	out       io.Writer     // progress lines
	htmlDir   string        // where Porcupine's visualisation of a refused partition goes ("": nowhere)
	noBounds  bool          // no session acquires with a maximum hold time
}

const root = "/zklock-chaos"

// session is one client session and its locks.
type session struct {
	idx    int
	policy zklock.ErrorPolicy
	faults *zktest.Faults
	client *zklock.Client
	log    *logBuf // what its Client logged
	occ    occupancy
}

// sid is the id of the session's current ZooKeeper session (0 before the
// first), as its fault proxies saw a server grant it: a Client made by
// Connect runs on zklock's own session, which it does not expose.
func (s *session) sid() int64 { return s.faults.Session().ID }

// server is the server that granted the session's current ZooKeeper
// session, as cluster.Servers names it ("" before the first).
func (s *session) server() string { return s.faults.Session().Server }

// contention is the state of the contention phase.
type contention struct {
	cfg      config
	cluster  zktest.Cluster
	admin    *zk.Conn
	sessions []*session
	j        journal
	st       counters
	solo     soloCounts
}

// soloCounts follow the solo Mutex (kindSolo), whose acquires alone may
// skip their listing: its grants without a listing (which its Client logs
// at Debug level) and the deletions of its parent while empty, as
// ZooKeeper's container reaper does.
type soloCounts struct {
	grants, reaps atomic.Int64
}

// soloPath is the solo Mutex's path.
const soloPath = root + "/solo"

// isSolo reports whether session idx takes the solo Mutex: two sessions,
// one of each error policy, one with long sections.
func isSolo(idx int) bool { return idx%16 == 4 || idx%16 == 13 }

// openSessions connects cfg.sessions clients, alternating the error
// policies, each through its own fault proxies.
func (c *contention) openSessions() error {
	for i := 0; i < c.cfg.sessions; i++ {
		f, err := zktest.NewFaults(c.cluster.Servers())
		if err != nil {
			return err
		}
		s := &session{idx: i, policy: zklock.ErrorPolicy(i % 2), faults: f, log: newLogBuf(20000, &c.solo.grants)}
		c.sessions = append(c.sessions, s)
		s.client, err = zklock.Connect(c.cluster.Servers(),
			zklock.WithSessionTimeout(c.cfg.timeout),
			zklock.WithConnectTimeout(time.Minute),
			zklock.WithErrorPolicy(s.policy),
			zklock.WithLogger(slog.New(s.log)),
			zklock.WithDialer(f.Dial))
		if err != nil {
			return fmt.Errorf("session %d: %w", i, err)
		}
	}
	return nil
}

// workers builds each session's workers: one on the Mutex, or in a
// quarter of the sessions (two in every eight: one with long sections,
// one without) on the Election instead; one on the ReadWriteLock (a
// writer in every fourth session, else a reader); one on the Semaphore;
// and in two sessions one on the solo Mutex, which takes it in bursts
// with idle times between, so that it is mostly alone (see soloCounts).
func (c *contention) workers() ([]*worker, error) {
	var ws []*worker
	for _, s := range c.sessions {
		first, err := c.exclusive(s)
		if err != nil {
			return nil, err
		}
		rw, err := zklock.NewReadWriteLock(s.client, root+"/rwlock")
		if err != nil {
			return nil, err
		}
		sem, err := zklock.NewSemaphore(s.client, root+"/semaphore", c.cfg.maxLeases)
		if err != nil {
			return nil, err
		}
		side, k := rw.ReadLock(), kindRead
		if s.idx%4 == 0 {
			side, k = rw.WriteLock(), kindWrite
		}
		for _, r := range []recipe{
			first,
			holdRecipe(k, side.Lock, resource("rwlock")),
			leaseRecipe(sem, resource("semaphore")),
		} {
			ws = append(ws, c.worker(s, r))
		}
		if isSolo(s.idx) {
			m, err := zklock.NewMutex(s.client, soloPath)
			if err != nil {
				return nil, err
			}
			w := c.worker(s, holdRecipe(kindSolo, m.Lock, resource("solo")))
			w.idle = 4
			ws = append(ws, w)
		}
	}
	return ws, nil
}

// exclusive returns session s's recipe on the Mutex, or, for sessions 2
// and 3 of every eight, on the Election.
func (c *contention) exclusive(s *session) (recipe, error) {
	if s.idx%8 == 2 || s.idx%8 == 3 {
		e, err := zklock.NewElection(s.client, root+"/election", fmt.Sprintf("s%02d", s.idx))
		if err != nil {
			return recipe{}, err
		}
		return holdRecipe(kindLeader, e.Campaign, resource("election")), nil
	}
	m, err := zklock.NewMutex(s.client, root+"/mutex")
	if err != nil {
		return recipe{}, err
	}
	return holdRecipe(kindMutex, m.Lock, resource("mutex")), nil
}

func (c *contention) worker(s *session, r recipe) *worker {
	return &worker{
		who:     r.kind.label(s.idx),
		r:       r,
		sess:    s,
		stale:   c.admin,
		j:       &c.j,
		st:      &c.st,
		rnd:     rand.New(rand.NewPCG(c.cfg.seed, uint64(s.idx)<<8|uint64(r.kind))),
		occ:     &s.occ,
		maxHold: c.cfg.maxHold,
		timeout: c.cfg.timeout,
		long:    c.cfg.longEvery * btoi(s.idx%4 == 1 || s.idx%4 == 2),
		// In a quarter of the sessions (one of the two with long sections
		// in every four), a maximum hold time of one session timeout: it
		// cuts their long sections short, as a loss.
		bound:   c.cfg.timeout * time.Duration(btoi(s.idx%4 == 1 && !c.cfg.noBounds)),
		patient: 4 * c.cfg.timeout,
		notice:  2 * c.cfg.timeout,
	}
}

func resource(lock string) string { return path.Join(root, "resource-"+lock) }

// makeResources creates the nodes the guarded writes go to.
func (c *contention) makeResources() error {
	if err := zktest.DeleteTree(c.admin, root); err != nil {
		return err
	}
	for _, p := range []string{root, resource("mutex"), resource("rwlock"), resource("semaphore"), resource("election"), resource("solo")} {
		if _, err := c.admin.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			return fmt.Errorf("create %s: %w", p, err)
		}
	}
	return nil
}

// contend runs the workers and the monkey for the configured time, then
// stops the workers; every worker releases what it holds before it ends.
func (c *contention) contend(ctx context.Context, m *monkey) error {
	ws, err := c.workers()
	if err != nil {
		return err
	}
	wctx, stop := context.WithTimeout(ctx, c.cfg.duration)
	defer stop()
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.run(wctx)
		}()
	}
	var monkeyErr error
	if c.cfg.noFaults {
		<-wctx.Done()
	} else {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.reap(wctx, rand.New(rand.NewPCG(c.cfg.seed, 1)))
		}()
		monkeyErr = m.run(wctx)
	}
	stop()
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * c.cfg.timeout):
		return errors.Join(monkeyErr, errors.New("workers did not stop within ten session timeouts"))
	}
	return monkeyErr
}

// reap deletes the solo Mutex's parent whenever it finds it empty, at
// random times until ctx ends, as ZooKeeper's container reaper would,
// only more often: the solo path must then notice that the parent is a new
// one, whose sequence numbers start again.
func (c *contention) reap(ctx context.Context, rnd *rand.Rand) {
	for ctx.Err() == nil {
		pause(ctx, 100*time.Millisecond+time.Duration(rnd.Int64N(int64(time.Second))))
		if c.admin.Delete(soloPath, -1) == nil {
			c.solo.reaps.Add(1)
		}
	}
}

// closeSessions closes every client and proxy.
func (c *contention) closeSessions() error {
	var errs []error
	for _, s := range c.sessions {
		if s.client != nil {
			errs = append(errs, s.client.Close())
		}
		errs = append(errs, s.faults.Close())
	}
	return errors.Join(errs...)
}

// orphans lists the ephemeral nodes left under the chaos root (lock and
// lease nodes, the election's latch nodes), with the session that owns
// each, apart from the nodes only a minority of the servers hold
// (divergence, see sortLeft).
func (c *contention) orphans() (orphans, divergence []string, err error) {
	nodes, err := zktest.Ephemerals(c.admin, root)
	orphans, divergence = sortLeft(c.cluster.Servers(), nodes, func(n, answers string) string {
		_, st, err := c.admin.Get(n)
		if err != nil {
			return fmt.Sprintf("%s (%v; on servers %s)", n, err, answers)
		}
		return fmt.Sprintf("%s (session 0x%x%s, created %s, on servers %s)%s", n, st.EphemeralOwner, c.whose(st.EphemeralOwner),
			time.UnixMilli(st.Ctime).Format("15:04:05.000"), answers, c.trace(n, st.EphemeralOwner))
	})
	return orphans, divergence, err
}

// trace returns what the owning session's Client logged about node n,
// found by the uuid of its protected name ("_c_<uuid>-lock-<seq10>",
// "-__READ__", "-__WRIT__", "-lease-", an election's "-latch-").
func (c *contention) trace(n string, sid int64) string {
	id, ok := strings.CutPrefix(path.Base(n), "_c_")
	s := c.sessionOf(sid)
	if !ok || len(id) < uuidLen || s == nil {
		return ""
	}
	out := s.log.grep(id[:uuidLen])
	if len(out) == 0 {
		return ""
	}
	return "\n      " + strings.Join(out, "\n      ")
}

// uuidLen is the length of the uuid in a protected node's name.
const uuidLen = 36

// whose names the chaos session with id sid, if it is one.
func (c *contention) whose(sid int64) string {
	if s := c.sessionOf(sid); s != nil {
		return fmt.Sprintf(", s%02d, %v, state %v", s.idx, s.policy, s.client.State())
	}
	return ""
}

// sessionOf returns the chaos session whose id is sid, or nil.
func (c *contention) sessionOf(sid int64) *session {
	for _, s := range c.sessions {
		if s.client != nil && s.sid() == sid {
			return s
		}
	}
	return nil
}

package zklock_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zklock/zklock"
)

// Curator's LeaderSelector logs what takeLeadership throws ("The leader
// threw an exception"), releases, and with autoRequeue queues again. A
// Selector's Run whose function returns an error while it leads does the
// same: it logs the error at Error level on the Client's logger, resigns,
// waits the retry policy's first back-off (a function that fails at once
// must not spin), and queues again; b leads between. a fails its first two
// terms and leads a third time, and its Run returns only when its context
// ends, with context.Canceled.
func TestIntegration_SelectorRequeuesAfterError(t *testing.T) {
	t.Parallel()
	e := setup(t)
	bg := context.Background()
	var mu sync.Mutex
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(syncWriter{&mu, &logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	const backOff = 300 * time.Millisecond
	ca := e.client(zklock.WithLogger(logger), zklock.WithRetryPolicy(zklock.RetryUntilElapsed{Max: 10 * time.Second, Sleep: backOff}))
	sa, err := zklock.NewSelector(ca, e.root+"/selector", "a")
	require.NoError(t, err)
	sb, err := zklock.NewSelector(e.client(), e.root+"/selector", "b")
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	terms := make(chan string, 100)
	aStarts := make(chan time.Time, 10)
	transient := errors.New("transient")
	var aTerms atomic.Int32
	leadA := func(ctx context.Context) error {
		aStarts <- time.Now() // a has three terms: never blocks
		select {
		case terms <- "a":
		case <-ctx.Done():
		}
		if aTerms.Add(1) <= 2 {
			return transient
		}
		<-ctx.Done()
		return ctx.Err()
	}
	leadB := func(ctx context.Context) error {
		select {
		case terms <- "b":
		default: // the test reads what it needs; never block a term
		}
		select { // a short term, so that b does not spin while a backs off
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
		}
		return nil
	}
	runA := make(chan error, 1)
	go func() { runA <- sa.Run(ctx, leadA) }()
	require.Equal(t, "a", await(t, terms, 10*time.Second), "a leads first, and fails")
	prev := await(t, aStarts, time.Second)
	runB := make(chan error, 1)
	go func() { runB <- sb.Run(ctx, leadB) }()

	for term := 2; term <= 3; term++ {
		who := awaitTerm(t, terms, runA, 10*time.Second)
		require.Equal(t, "b", who, "b leads after a's term %d failed", term-1)
		for who == "b" { // b's terms, until a is back
			who = awaitTerm(t, terms, runA, 10*time.Second)
		}
		start := await(t, aStarts, time.Second)
		assert.GreaterOrEqual(t, start.Sub(prev), backOff, "a backs off before its term %d: no spin", term)
		prev = start
	}
	select {
	case err := <-runA:
		t.Fatalf("a's Run returned while a leads: %v", err)
	default:
	}

	mu.Lock()
	logged := logs.String()
	mu.Unlock()
	var failed []string
	for _, line := range strings.Split(logged, "\n") {
		if strings.Contains(line, "leader's function failed") {
			failed = append(failed, line)
		}
	}
	require.Len(t, failed, 2, "each failed term is logged once:\n%s", logged)
	for _, line := range failed {
		assert.Contains(t, line, "level=ERROR")
		assert.Contains(t, line, "err=transient")
		assert.Contains(t, line, "path="+sa.Path())
	}

	cancel()
	require.ErrorIs(t, await(t, runA, 10*time.Second), context.Canceled)
	require.ErrorIs(t, await(t, runB, 10*time.Second), context.Canceled)
}

// awaitTerm reads the next term's participant from terms, failing the
// test if run (a participant's Run) returns first or nothing comes
// within d.
func awaitTerm(t *testing.T, terms <-chan string, run <-chan error, d time.Duration) string {
	t.Helper()
	select {
	case who := <-terms:
		return who
	case err := <-run:
		t.Fatalf("Run returned while its participant should queue again: %v", err)
	case <-time.After(d):
		t.Fatalf("no term within %v", d)
	}
	return ""
}

// A Selector's function fences its writes with its term's Hold
// (Selector.Term): the token grows from term to term, a guarded write
// commits while the term stands and is refused once an operator deleted
// the leader's node, and a Release through the Hold resigns: Run then
// queues again without logging a failure. A context that carries no term
// gets ErrNotHeld.
func TestIntegration_SelectorTermFencesWrites(t *testing.T) {
	t.Parallel()
	e := setup(t)
	var mu sync.Mutex
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(syncWriter{&mu, &logs}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	s, err := zklock.NewSelector(e.client(zklock.WithLogger(logger)), e.root+"/fenced", "a")
	require.NoError(t, err)
	e.create(e.root + "/data")
	write := func(ctx context.Context, hd *zklock.Hold, v string) error {
		_, err := hd.Multi(ctx, &zk.SetDataRequest{Path: e.root + "/data", Data: []byte(v), Version: -1})
		return err
	}

	_, err = s.Term(context.Background())
	require.ErrorIs(t, err, zklock.ErrNotHeld)

	var tokens []int64
	term := func(ctx context.Context) *zklock.Hold {
		hd, err := s.Term(ctx)
		require.NoError(t, err)
		token, err := hd.Token()
		require.NoError(t, err)
		tokens = append(tokens, token)
		return hd
	}
	require.NoError(t, s.Lead(context.Background(), func(ctx context.Context) error {
		return write(ctx, term(ctx), "lead")
	}))
	// A term lost, then resigned through its Hold: Lead still says it was
	// lost, as when Lead resigns itself.
	err = s.Lead(context.Background(), func(ctx context.Context) error {
		hd, err := s.Term(ctx)
		require.NoError(t, err)
		require.NoError(t, e.admin.Delete(hd.Path(), -1))
		<-hd.Done()
		require.ErrorIs(t, hd.Release(), zklock.ErrLockLost)
		return nil
	})
	require.ErrorIs(t, err, zklock.ErrLockLost)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	terms := 0
	err = s.Run(ctx, func(fctx context.Context) error {
		terms++
		hd := term(fctx)
		switch terms {
		case 1: // resign through the Hold
			return hd.Release()
		case 2: // an operator deletes the node: the write is refused
			require.NoError(t, write(fctx, hd, "run"))
			require.NoError(t, e.admin.Delete(hd.Path(), -1))
			<-hd.Done()
			assert.ErrorIs(t, write(fctx, hd, "late"), zklock.ErrLockLost)
			return nil
		}
		cancel()
		return nil
	})
	require.ErrorIs(t, err, context.Canceled)
	require.Len(t, tokens, 4)
	for i := 1; i < len(tokens); i++ {
		assert.Greater(t, tokens[i], tokens[i-1], "each term's token exceeds the last")
	}
	data, _, err := e.admin.Get(e.root + "/data")
	require.NoError(t, err)
	assert.Equal(t, "run", string(data), "the lost term's write was refused")
	mu.Lock()
	defer mu.Unlock()
	assert.NotContains(t, logs.String(), "function failed", "a resignation through the Hold is no failure")
	waitChildren(t, e, e.root+"/fenced", 0)
}

package zklock_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zklock/zklock"
)

// Each error message names each fact once: one "zklock: ", the sentinel's
// meaning not repeated after the text that already says it, and still
// errors.Is the sentinel.
func TestErrorsReadOnce(t *testing.T) {
	t.Parallel()
	mutex := func(c *zklock.Client, p string, opts ...zklock.LockOption) error {
		_, err := zklock.NewMutex(c, p, opts...)
		return err
	}
	connect := func(opts ...zklock.Option) error {
		_, err := zklock.Connect([]string{"127.0.0.1:1"}, opts...)
		return err
	}
	closed := zklock.NewClient(nil, nil)
	for _, tt := range []struct {
		name    string
		err     error
		want    error
		text    string // the message, exactly
		pattern string // or a part of it, when the message has variable parts
	}{
		{"relative path", zklock.ValidatePath("locks/x"), zklock.ErrInvalidPath, `zklock: invalid path "locks/x": must start with /`, ""},
		{"root as lock", zklock.ValidateLockPath("/"), zklock.ErrInvalidPath, `zklock: invalid path "/": the root cannot be a lock path`, ""},
		{"recipe path", mutex(nil, "x"), zklock.ErrInvalidArgument, `zklock: lock "x": nil or zero Client (use Connect or NewClient)`, ""},
		{"NewClient nil", mutex(closed, "/x"), zklock.ErrInvalidArgument, `zklock: lock "/x": NewClient: nil conn or events`, ""},
		{"option", connect(zklock.WithSessionTimeout(0)), zklock.ErrInvalidArgument, "", "zklock: session timeout 0s is outside"},
		{"namespace", connect(zklock.WithNamespace("a//b")), zklock.ErrInvalidArgument, `zklock: namespace "a//b": invalid path "/a//b": empty segment`, ""},
		{"lock data", mutex(closed, "/x", zklock.WithLockData(make([]byte, 2<<20))), zklock.ErrInvalidArgument, "", "zklock: lock /x: lock data of 2097152 bytes exceeds"},
		{"nil driver", mutex(closed, "/x", zklock.WithDriver(nil)), zklock.ErrInvalidArgument, "zklock: lock /x: nil Driver", ""},
		{"nil lock option", mutex(closed, "/x", nil), zklock.ErrInvalidArgument, "zklock: lock /x: nil LockOption", ""},
		{"empty servers", func() error { _, err := zklock.Connect(nil); return err }(), zklock.ErrInvalidArgument, "zklock: connect: empty server list", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			require.ErrorIs(t, tt.err, tt.want)
			msg := tt.err.Error()
			if tt.text != "" {
				assert.Equal(t, tt.text, msg)
			} else {
				assert.Contains(t, msg, tt.pattern)
			}
			assert.Equal(t, 1, strings.Count(msg, "zklock:"), msg)
		})
	}
}

// An operation on a closed Client says "closed" once.
func TestIntegration_ClosedErrorReadsOnce(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.client()
	m := e.mutex(c, "/closed")
	require.NoError(t, c.Close())
	_, err := m.Acquire(context.Background())
	require.ErrorIs(t, err, zklock.ErrClosed)
	assert.Equal(t, "zklock: acquire "+e.root+"/closed: client closed", err.Error())

	ctx, cancel := context.WithTimeoutCause(context.Background(), time.Nanosecond, zk.ErrNoServer)
	defer cancel()
	<-ctx.Done()
	_, err = e.mutex(e.client(), "/closed").Acquire(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorIs(t, err, zk.ErrNoServer)
	assert.Equal(t, 1, strings.Count(err.Error(), "zklock:"), err.Error())
}

// Every recipe's call checks, in one order and in one wording, that the
// recipe was made by its constructor, that its context is not nil, and,
// for a call that would begin work, that its Client is open.
func TestIntegration_RecipeCallChecks(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.client()
	var nilCtx context.Context
	m := e.mutex(c, "/m")
	s, err := zklock.NewSemaphore(c, e.root+"/s", 2)
	require.NoError(t, err)
	el, err := zklock.NewElection(c, e.root+"/e", "a")
	require.NoError(t, err)
	sel, err := zklock.NewSelector(c, e.root+"/sel", "a")
	require.NoError(t, err)
	errOf := func(_ any, err error) error { return err }
	for _, tt := range []struct {
		name string
		err  error
		want error
		text string
	}{
		{"zero Mutex", errOf(new(zklock.Mutex).Acquire(context.Background())), zklock.ErrInvalidArgument,
			"zklock: acquire: Mutex not made by NewMutex or NewReadWriteLock: invalid argument"},
		{"Mutex, nil context", errOf(m.Acquire(nilCtx)), zklock.ErrInvalidArgument,
			"zklock: acquire " + e.root + "/m: nil context: invalid argument"},
		{"zero Semaphore", errOf(new(zklock.Semaphore).Acquire(context.Background())), zklock.ErrInvalidArgument,
			"zklock: semaphore acquire: Semaphore not made by NewSemaphore: invalid argument"},
		{"Semaphore, nil context", errOf(s.Acquire(nilCtx)), zklock.ErrInvalidArgument,
			"zklock: semaphore acquire " + e.root + "/s: nil context: invalid argument"},
		{"zero Election", errOf(new(zklock.Election).Leader(context.Background())), zklock.ErrInvalidArgument,
			"zklock: leader: Election not made by NewElection: invalid argument"},
		{"Election, nil context", errOf(el.Leader(nilCtx)), zklock.ErrInvalidArgument,
			"zklock: leader " + e.root + "/e: nil context: invalid argument"},
		{"zero Selector", errOf(new(zklock.Selector).Leader(context.Background())), zklock.ErrInvalidArgument,
			"zklock: leader: Selector not made by NewSelector: invalid argument"},
		{"Selector, nil context", errOf(sel.Leader(nilCtx)), zklock.ErrInvalidArgument,
			"zklock: leader " + e.root + "/sel: nil context: invalid argument"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			require.ErrorIs(t, tt.err, tt.want)
			assert.Equal(t, tt.text, tt.err.Error())
		})
	}
	require.NoError(t, c.Close())
	for name, err := range map[string]error{
		"Election": errOf(el.Leader(context.Background())),
		"Selector": errOf(sel.Leader(context.Background())),
	} {
		require.ErrorIs(t, err, zklock.ErrClosed, name)
		assert.Contains(t, err.Error(), "zklock: leader "+e.root+"/", name)
	}
}

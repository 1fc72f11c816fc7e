package zklock_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zklock/zklock"
	"github.com/zklock/zklock/internal/zktest"
)

// Bad input gets an error wrapping a package sentinel, never a panic, and
// leaves nothing behind.
func TestIntegration_BadInputNeverPanics(t *testing.T) {
	t.Parallel()
	e := setup(t)
	bg := context.Background()

	type badInput struct {
		name string
		want []error // the error must wrap one of these
		// run sets the case up and returns the bad call, the path its
		// error must name ("" for none), and the checks and clean-up to
		// run after the call, whether it panicked or not.
		run func(t *testing.T) (call func() error, path string, after func(t *testing.T))
	}
	multiNil := func(member func() zklock.Locker) func(t *testing.T) (func() error, string, func(t *testing.T)) {
		return func(t *testing.T) (func() error, string, func(t *testing.T)) {
			c := e.client() // closed at the end: ends whatever a panic left held
			name := "/multi-" + strings.ReplaceAll(t.Name()[strings.LastIndex(t.Name(), "/")+1:], ".", "")
			m1 := e.mutex(c, name)
			call := func() error {
				ml := zklock.NewMultiLock(m1, member())
				hc, err := ml.Acquire(bg)
				if err == nil && hc != nil {
					t.Errorf("MultiLock with a nil member acquired")
					assert.NoError(t, ml.Release(hc))
				}
				return err
			}
			after := func(t *testing.T) {
				assert.False(t, m1.IsAcquiredInThisProcess(), "the member taken must be released")
				assert.Empty(t, e.children(e.root+name), "no node left under the member's path")
				require.NoError(t, c.Close())
			}
			return call, "", after
		}
	}
	rootNode := func(t *testing.T, p string) bool {
		ok, _, err := e.admin.Exists(p)
		require.NoError(t, err)
		return ok
	}
	// emptyPath checks that nothing appears at /locks or /leases, and
	// removes what does.
	emptyPath := func(t *testing.T, build func() (func(ctx context.Context) (release func() error, err error), error)) (func() error, string, func(t *testing.T)) {
		before := map[string]bool{"/locks": rootNode(t, "/locks"), "/leases": rootNode(t, "/leases")}
		call := func() error {
			acquire, err := build()
			if err == nil && acquire != nil {
				ctx, cancel := context.WithTimeout(bg, 5*time.Second)
				defer cancel()
				if release, aerr := acquire(ctx); aerr == nil {
					assert.NoError(t, release())
				}
			}
			return err
		}
		after := func(t *testing.T) {
			for p, existed := range before {
				if existed {
					continue
				}
				if rootNode(t, p) {
					t.Errorf("node %s created at the root for an empty path", p)
					assert.NoError(t, zktest.DeleteTree(e.admin, p))
				}
			}
		}
		return call, "", after
	}

	cases := []badInput{
		{
			name: "Lease.Data(nil)",
			want: []error{zklock.ErrInvalidArgument},
			run: func(t *testing.T) (func() error, string, func(t *testing.T)) {
				l, err := e.semaphore(e.client(), "/data", 1).Acquire(bg)
				require.NoError(t, err)
				var nilCtx context.Context
				call := func() error { _, err := l.Data(nilCtx); return err }
				return call, l.Path(), func(t *testing.T) { require.NoError(t, l.Release()) }
			},
		},
		{
			name: "NewMultiLock(m1,nil).Acquire",
			want: []error{zklock.ErrInvalidArgument},
			run:  multiNil(func() zklock.Locker { return nil }),
		},
		{
			name: "NewMultiLock(m1,typed-nil).Acquire",
			want: []error{zklock.ErrInvalidArgument},
			run: multiNil(func() zklock.Locker {
				var nilMutex *zklock.Mutex
				return nilMutex
			}),
		},
		{
			name: "Mutex.Do(nil fn)",
			want: []error{zklock.ErrInvalidArgument},
			run: func(t *testing.T) (func() error, string, func(t *testing.T)) {
				m := e.mutex(e.client(), "/do")
				call := func() error { return m.Do(bg, nil) }
				after := func(t *testing.T) {
					assert.False(t, m.IsAcquiredInThisProcess(), "m must not stay held")
					assert.Empty(t, e.children(e.root+"/do"), "no node left under the lock's path")
				}
				return call, m.Path(), after
			},
		},
		{
			name: "NewSemaphore(empty path)",
			want: []error{zklock.ErrInvalidPath},
			run: func(t *testing.T) (func() error, string, func(t *testing.T)) {
				c := e.client()
				return emptyPath(t, func() (func(ctx context.Context) (func() error, error), error) {
					s, err := zklock.NewSemaphore(c, "", 1)
					if s == nil {
						return nil, err
					}
					return func(ctx context.Context) (func() error, error) {
						l, err := s.Acquire(ctx)
						if err != nil {
							return nil, err
						}
						return l.Release, nil
					}, err
				})
			},
		},
		{
			name: "NewSemaphoreMutex(empty path)",
			want: []error{zklock.ErrInvalidPath},
			run: func(t *testing.T) (func() error, string, func(t *testing.T)) {
				c := e.client()
				return emptyPath(t, func() (func(ctx context.Context) (func() error, error), error) {
					m, err := zklock.NewSemaphoreMutex(c, "")
					if m == nil {
						return nil, err
					}
					return func(ctx context.Context) (func() error, error) {
						h, err := m.Acquire(ctx)
						if err != nil {
							return nil, err
						}
						return func() error { return m.Release(h) }, nil
					}, err
				})
			},
		},
		{
			name: "NewMutex(path over 1MB)",
			want: []error{zklock.ErrInvalidPath, zklock.ErrInvalidArgument},
			run: func(t *testing.T) (func() error, string, func(t *testing.T)) {
				c := e.client()
				other := e.mutex(c, "/other")
				h, err := other.Acquire(bg)
				require.NoError(t, err)
				long := e.root + "/" + strings.Repeat("a", 2<<20)
				var m *zklock.Mutex
				call := func() error {
					var err error
					m, err = zklock.NewMutex(c, long)
					return err
				}
				after := func(t *testing.T) {
					if m != nil {
						// Show the damage the bad path does to the Client.
						ctx, cancel := context.WithTimeout(bg, 10*time.Second)
						hc, err := m.TryAcquire(ctx)
						cancel()
						if err == nil {
							assert.NoError(t, m.Release(hc))
						} else {
							t.Logf("TryAcquire on the over-long path: %s", strings.ReplaceAll(err.Error(), long, "<long path>"))
						}
						assert.Never(t, func() bool { return h.Err() != nil }, time.Second, 10*time.Millisecond,
							"another Mutex's hold on the same Client must stay live")
					}
					assert.NoError(t, h.Err(), "another Mutex's hold on the same Client must stay live (cause %v)", context.Cause(h))
					if err := other.Release(h); err != nil {
						t.Logf("release of the other hold: %v", err)
					}
				}
				return call, "", after
			},
		},
		{
			name: "Connect(session timeout 1µs)",
			want: []error{zklock.ErrInvalidArgument},
			run: func(t *testing.T) (func() error, string, func(t *testing.T)) {
				return connectCall(e.servers, time.Microsecond), "", func(*testing.T) {}
			},
		},
		{
			name: "Connect(session timeout 1000h)",
			want: []error{zklock.ErrInvalidArgument},
			run: func(t *testing.T) (func() error, string, func(t *testing.T)) {
				return connectCall(e.servers, 1000*time.Hour), "", func(*testing.T) {}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			call, path, after := tc.run(t)
			var err error
			if noPanic(t, tc.name, func() { err = call() }) {
				if assert.Error(t, err, "bad input must be refused") {
					assert.True(t, isOneOf(err, tc.want...), "error %v must wrap one of %v", err, tc.want)
					if path != "" {
						assert.Contains(t, err.Error(), path, "the error must name the path")
					}
				}
			}
			after(t)
		})
	}

	for _, retries := range []int{-1, -5} {
		t.Run(fmt.Sprintf("ExponentialBackoff.AllowRetry(%d)", retries), func(t *testing.T) {
			p := zklock.ExponentialBackoff{Base: time.Millisecond, MaxRetries: 3}
			var (
				wait time.Duration
				ok   bool
			)
			if noPanic(t, fmt.Sprintf("AllowRetry(%d, 0)", retries), func() { wait, ok = p.AllowRetry(retries, 0) }) {
				assert.True(t, !ok || wait >= 0, "AllowRetry(%d, 0) = %v, %v", retries, wait, ok)
			}
		})
	}
}

// connectCall connects with the given session timeout; a bounded connect
// timeout keeps a wrongly accepted value from stalling the test for the
// default 15s. It closes a Client that comes back.
func connectCall(servers []string, session time.Duration) func() error {
	return func() error {
		c, err := zklock.Connect(servers, zklock.WithSessionTimeout(session), zklock.WithConnectTimeout(5*time.Second))
		if c != nil {
			c.Close()
		}
		return err
	}
}

// Every exported method of zero and nil values of the package's types, and
// the package functions given nil, returns (an error wrapping a sentinel,
// if any), never panics and never hangs.
func TestZeroValuesNeverPanic(t *testing.T) {
	t.Parallel()
	values := []struct {
		typ, kind string
		make      func() any
	}{
		{"Client", "zero", func() any { return new(zklock.Client) }},
		{"Client", "nil", func() any { return (*zklock.Client)(nil) }},
		{"Client", "NewClient(nil,nil)", func() any { return zklock.NewClient(nil, nil) }},
		{"Mutex", "zero", func() any { return new(zklock.Mutex) }},
		{"Mutex", "nil", func() any { return (*zklock.Mutex)(nil) }},
		{"ReadWriteLock", "zero", func() any { return new(zklock.ReadWriteLock) }},
		{"ReadWriteLock", "nil", func() any { return (*zklock.ReadWriteLock)(nil) }},
		{"Semaphore", "zero", func() any { return new(zklock.Semaphore) }},
		{"Semaphore", "nil", func() any { return (*zklock.Semaphore)(nil) }},
		{"Lease", "zero", func() any { return new(zklock.Lease) }},
		{"Lease", "nil", func() any { return (*zklock.Lease)(nil) }},
		{"SemaphoreMutex", "zero", func() any { return new(zklock.SemaphoreMutex) }},
		{"SemaphoreMutex", "nil", func() any { return (*zklock.SemaphoreMutex)(nil) }},
		{"MultiLock", "zero", func() any { return new(zklock.MultiLock) }},
		{"MultiLock", "nil", func() any { return (*zklock.MultiLock)(nil) }},
	}
	ctxType := reflect.TypeFor[context.Context]()
	errType := reflect.TypeFor[error]()
	const bound = 5 * time.Second

	// checkResults checks a call's results: a non-nil error wraps a
	// sentinel, a returned func can be called.
	checkResults := func(t *testing.T, what string, out []reflect.Value) {
		for _, o := range out {
			switch {
			case o.Type().Implements(errType) && o.Kind() == reflect.Interface:
				if !o.IsNil() {
					err := o.Interface().(error)
					assert.True(t, isOneOf(err, sentinels...), "%s returned an error wrapping no sentinel: %v", what, err)
				}
			case o.Kind() == reflect.Func && !o.IsNil():
				if o.Type().NumIn() == 0 {
					var fout []reflect.Value
					if noPanicWithin(t, what+"'s returned func", bound, func() { fout = o.Call(nil) }) {
						for _, fo := range fout {
							if fo.Type().Implements(errType) && fo.Kind() == reflect.Interface && !fo.IsNil() {
								assert.True(t, isOneOf(fo.Interface().(error), sentinels...),
									"%s's returned func returned an error wrapping no sentinel: %v", what, fo.Interface())
							}
						}
					}
				}
			}
		}
	}

	for _, v := range values {
		rt := reflect.TypeOf(v.make())
		for i := range rt.NumMethod() {
			method := rt.Method(i)
			mt := reflect.ValueOf(v.make()).Method(i).Type()
			hasCtx := false
			for j := range mt.NumIn() {
				if mt.In(j) == ctxType {
					hasCtx = true
				}
			}
			rounds := []string{"bg"}
			if hasCtx {
				rounds = append(rounds, "nilctx")
			}
			for _, round := range rounds {
				name := v.typ + "/" + v.kind + "/" + method.Name
				if round == "nilctx" {
					name += "_nilctx"
				}
				t.Run(name, func(t *testing.T) {
					recv := reflect.ValueOf(v.make())
					fn := recv.Method(i)
					nIn := mt.NumIn()
					if mt.IsVariadic() {
						nIn-- // call with no variadic arguments
					}
					args := make([]reflect.Value, nIn)
					for j := range nIn {
						in := mt.In(j)
						switch {
						case in == ctxType && round == "bg":
							args[j] = reflect.ValueOf(context.Background())
						default: // a nil context, a nil func, the zero value
							args[j] = reflect.Zero(in)
						}
					}
					what := fmt.Sprintf("(%s %s).%s", v.kind, v.typ, method.Name)
					var out []reflect.Value
					if noPanicWithin(t, what, bound, func() { out = fn.Call(args) }) {
						checkResults(t, what, out)
					}
				})
			}
		}
	}

	bg := context.Background()
	var nilCtx context.Context
	funcs := []struct {
		name string
		call func() error
	}{
		{"Revoke(bg,nil,/x)", func() error { return zklock.Revoke(bg, nil, "/x") }},
		{"Revoke(nil,nil,empty)", func() error { return zklock.Revoke(nilCtx, nil, "") }},
		{"NewMutex(nil,/x)", func() error { _, err := zklock.NewMutex(nil, "/x"); return err }},
	}
	for _, f := range funcs {
		t.Run("func/"+f.name, func(t *testing.T) {
			var err error
			if noPanicWithin(t, f.name, bound, func() { err = f.call() }) {
				if assert.Error(t, err, "%s must be refused", f.name) {
					assert.True(t, isOneOf(err, zklock.ErrInvalidArgument), "%s: want ErrInvalidArgument, got %v", f.name, err)
				}
			}
		})
	}
}

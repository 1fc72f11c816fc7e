package zklock_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zklock/zklock"
)

const (
	uuidA = "_c_53345f98-9423-4e0c-a7b5-9f819e3ec2e1-"
	uuidB = "_c_0b1e6a7e-1b2c-4d5e-8f90-a1b2c3d4e5f6-"
)

func TestStandardDriver_SortKey(t *testing.T) {
	t.Parallel()
	d := zklock.StandardDriver{}
	tests := []struct{ child, lockName, want string }{
		{uuidA + "lock-0000000003", "lock-", "0000000003"},
		{"lock-0000000007", "lock-", "0000000007"},
		{uuidA + "__READ__0000000001", "__READ__", "0000000001"},
		{"lock-lock-0000000002", "lock-", "0000000002"}, // the last occurrence counts
		{"foreign", "lock-", "foreign"},
		{"", "lock-", ""},
		{"0", "lock-", "0"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, d.SortKey(tt.child, tt.lockName), tt.child)
	}
}

func TestStandardDriver_GetsTheLock(t *testing.T) {
	t.Parallel()
	d := zklock.StandardDriver{}
	children := []string{uuidA + "lock-0000000001", uuidB + "lock-0000000002", uuidA + "lock-0000000003"}
	tests := []struct {
		name      string
		node      string
		maxLeases int
		want      zklock.PredicateResult
		wantErr   error
	}{
		{"first holds", children[0], 1, zklock.PredicateResult{Acquired: true}, nil},
		{"second watches first", children[1], 1, zklock.PredicateResult{Watch: children[0]}, nil},
		{"third watches second", children[2], 1, zklock.PredicateResult{Watch: children[1]}, nil},
		{"two leases: second holds", children[1], 2, zklock.PredicateResult{Acquired: true}, nil},
		{"two leases: third watches first", children[2], 2, zklock.PredicateResult{Watch: children[0]}, nil},
		{"missing node", uuidB + "lock-0000000009", 1, zklock.PredicateResult{}, zk.ErrNoNode},
		{"zero leases", children[0], 0, zklock.PredicateResult{}, zklock.ErrInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := d.GetsTheLock(children, tt.node, tt.maxLeases)
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

// Foreign children (CURATOR-43) take part in the order but never crash it.
func TestStandardDriver_ForeignChildren(t *testing.T) {
	t.Parallel()
	d := zklock.StandardDriver{}
	children := []string{"locks", uuidA + "lock-0000000002", "leases", "0", "", "_c_short", uuidB + "lock-0000000001"}
	zklock.SortChildren(children, "lock-", d)
	assert.Equal(t, []string{"", "0", uuidB + "lock-0000000001", uuidA + "lock-0000000002", "_c_short", "leases", "locks"}, children)
	got, err := d.GetsTheLock(children, uuidB+"lock-0000000001", 1)
	require.NoError(t, err)
	assert.Equal(t, zklock.PredicateResult{Watch: "0"}, got)
}

// The driver never panics on any listing, and follows Curator's rule on
// the sorted listing: a node holds while fewer than maxLeases children sort
// before it, and otherwise watches the child maxLeases places ahead. A
// maxLeases below 1 is ErrInvalidArgument, a node not listed zk.ErrNoNode.
func FuzzGetsTheLock(f *testing.F) {
	f.Add("locks/leases/"+uuidA+"lock-0000000001/0", 2, 1, false)
	f.Add(uuidA+"lock-0000000001/"+uuidB+"lock-0000000000", 0, 1, false)
	f.Add("//", 1, 0, false)
	f.Add("lock-0000000003/lock--2147483648/lock-2147483647", 2, -1, false)
	f.Add("lock-0000000001", 0, 1, true)
	f.Fuzz(func(t *testing.T, joined string, pick, maxLeases int, missing bool) {
		children := strings.Split(joined, "/")
		d := zklock.StandardDriver{}
		zklock.SortChildren(children, "lock-", d)
		for i := 1; i < len(children); i++ {
			if zklock.CompareUTF16(d.SortKey(children[i-1], "lock-"), d.SortKey(children[i], "lock-")) > 0 {
				t.Fatalf("not sorted: %q", children)
			}
		}
		node := children[int(uint(pick)%uint(len(children)))]
		if missing {
			node = "\x00not-listed"
		}
		res, err := d.GetsTheLock(children, node, maxLeases)
		i := slices.Index(children, node)
		switch {
		case maxLeases < 1:
			if !errors.Is(err, zklock.ErrInvalidArgument) {
				t.Fatalf("maxLeases %d: err = %v", maxLeases, err)
			}
		case i < 0:
			if !errors.Is(err, zk.ErrNoNode) {
				t.Fatalf("node %q not listed: err = %v", node, err)
			}
		case err != nil:
			t.Fatalf("GetsTheLock: %v", err)
		case res.Acquired != (i < maxLeases):
			t.Fatalf("node %q at %d, maxLeases %d: %+v", node, i, maxLeases, res)
		case res.Acquired && res.Watch != "":
			t.Fatalf("acquired, yet watches %q", res.Watch)
		case !res.Acquired && res.Watch != children[i-maxLeases]:
			t.Fatalf("node %q at %d, maxLeases %d: watches %q, want %q", node, i, maxLeases, res.Watch, children[i-maxLeases])
		}
	})
}

// panickyDriver is the standard driver whose CreateNode panics.
type panickyDriver struct{ zklock.StandardDriver }

func (panickyDriver) CreateNode(context.Context, *zklock.Client, string, []byte) (string, error) {
	panic("driver bug")
}

// A Driver whose CreateNode panics leaves nothing running behind the
// panic: the listing prepared to travel with the create ends, and Close
// returns.
func TestIntegration_DriverPanicInCreateNode(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.client()
	m := e.mutex(c, "/panicky", zklock.WithDriver(panickyDriver{}))
	require.PanicsWithValue(t, "driver bug", func() { _, _ = m.Acquire(context.Background()) })
	closed := make(chan error, 1)
	go func() { closed <- c.Close() }()
	require.NoError(t, await(t, closed, 10*time.Second), "Close returns")
}

// customDriver is the standard predicate as a Driver of its own. It
// embeds nothing, so it inherits none of StandardDriver's shortcuts, and
// declares none: the engine lists at every decision.
type customDriver struct{ std zklock.StandardDriver }

func (d customDriver) CreateNode(ctx context.Context, c *zklock.Client, path string, data []byte) (string, error) {
	return d.std.CreateNode(ctx, c, path, data)
}

func (d customDriver) GetsTheLock(children []string, node string, maxLeases int) (zklock.PredicateResult, error) {
	return d.std.GetsTheLock(children, node, maxLeases)
}

func (d customDriver) SortKey(child, lockName string) string { return d.std.SortKey(child, lockName) }

// declaringDriver is customDriver declaring the shortcuts sc.
type declaringDriver struct {
	customDriver
	sc zklock.Shortcuts
}

func (d declaringDriver) Shortcuts(int) zklock.Shortcuts { return d.sc }

var _ zklock.ShortcutDriver = declaringDriver{}

// embeddingDriver embeds StandardDriver and overrides nothing; as a
// Curator user's subclass of StandardLockInternalsDriver, it may change
// the predicate in a method of its own (embeddingSortDriver), so it takes
// no shortcut it does not declare.
type embeddingDriver struct{ zklock.StandardDriver }

// embeddingSortDriver embeds StandardDriver and overrides SortKey alone.
type embeddingSortDriver struct{ zklock.StandardDriver }

func (embeddingSortDriver) SortKey(child, lockName string) string {
	return zklock.StandardDriver{}.SortKey(child, lockName)
}

// No built-in driver declares its shortcuts through a method, which a
// type that embeds it would inherit: StandardDriver is no ShortcutDriver,
// nor is a type that embeds it.
func TestStandardDriver_NoShortcutsMethod(t *testing.T) {
	t.Parallel()
	for _, d := range []zklock.Driver{zklock.StandardDriver{}, embeddingDriver{}, embeddingSortDriver{}} {
		_, ok := d.(zklock.ShortcutDriver)
		assert.False(t, ok, "%T is a ShortcutDriver", d)
	}
}

// A custom Driver that declares GrantOnDelete is granted by the deletion
// of the holder it waits for, without listing again; one that declares
// nothing lists after the deletion.
func TestIntegration_DriverShortcutsGrantOnDelete(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		driver zklock.Driver
		lists  int // the waiter's listings after the holder's release
	}{
		{"declared", declaringDriver{sc: zklock.Shortcuts{GrantOnDelete: true}}, 0},
		{"StandardDriver", zklock.StandardDriver{}, 0},
		{"none", customDriver{}, 1},
		{"embeds StandardDriver", embeddingDriver{}, 1},
		{"embeds StandardDriver, overrides SortKey", embeddingSortDriver{}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			holder := e.mutex(e.client(), "/god", zklock.WithDriver(tc.driver))
			h, err := holder.Lock(context.Background())
			require.NoError(t, err)
			c, cc := e.countingClient()
			waiter := e.mutex(c, "/god", zklock.WithDriver(tc.driver))
			got := acquireAsync(context.Background(), waiter)
			waitParticipants(t, holder, 2)
			require.Eventually(t, func() bool { _, ops := cc.total(); return ops["getData"] == 2 },
				10*time.Second, time.Millisecond, "the waiter watches its own node and the holder's")
			_, before := cc.total()
			require.NoError(t, h.Release())
			a := await(t, got, 10*time.Second)
			require.NoError(t, a.err)
			assert.Equal(t, tc.lists, delta(cc, before)["getChildren"], "listings after the holder's release")
			require.NoError(t, waiter.Release(a.ctx))
		})
	}
}

// A custom Driver that declares LookAhead (with GrantOnDelete) has a
// waiter two places back also watch the holder, list again when the
// holder goes, and be granted by the release of the node before it
// without a listing. Without it, the waiter never watches the holder and
// lists after that release.
func TestIntegration_DriverShortcutsLookAhead(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		driver    zklock.Driver
		lookAhead bool
	}{
		{"declared", declaringDriver{sc: zklock.Shortcuts{GrantOnDelete: true, LookAhead: true}}, true},
		{"StandardDriver", zklock.StandardDriver{}, true},
		{"grant on delete only", declaringDriver{sc: zklock.Shortcuts{GrantOnDelete: true}}, false},
		{"none", customDriver{}, false},
		{"embeds StandardDriver", embeddingDriver{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			opt := zklock.WithDriver(tc.driver)
			holder := e.mutex(e.client(), "/ahead", opt)
			h, err := holder.Lock(context.Background())
			require.NoError(t, err)
			first := e.mutex(e.client(), "/ahead", opt)
			gotFirst := acquireAsync(context.Background(), first)
			waitParticipants(t, holder, 2)
			c, cc := e.countingClient()
			second := e.mutex(c, "/ahead", opt)
			got := acquireAsync(context.Background(), second)
			nodes := waitParticipants(t, holder, 3)
			watches := 2 // its own node and first's
			if tc.lookAhead {
				watches++ // and the holder's
			}
			require.Eventually(t, func() bool { _, ops := cc.total(); return ops["getData"] == watches },
				10*time.Second, time.Millisecond, "the waiter sets %d watches", watches)
			listed := cc.at("getChildren", e.root+"/ahead")

			require.NoError(t, h.Release())
			a := await(t, gotFirst, 10*time.Second)
			require.NoError(t, a.err)
			if tc.lookAhead {
				require.Eventually(t, func() bool { return cc.at("getChildren", e.root+"/ahead") == listed+1 },
					10*time.Second, time.Millisecond, "the waiter lists again when the holder goes")
				listed++
			}
			require.NoError(t, first.Release(a.ctx))
			b := await(t, got, 10*time.Second)
			require.NoError(t, b.err)
			wantLists := 1
			if tc.lookAhead {
				wantLists = 0
			}
			assert.Equal(t, wantLists, cc.at("getChildren", e.root+"/ahead")-listed, "listings after first's release")
			assert.Equal(t, tc.lookAhead, cc.at("getData", nodes[0]) == 1, "the waiter watched the holder")
			require.NoError(t, second.Release(b.ctx))
		})
	}
}

// A Mutex of a custom Driver that declares Solo, taken again and again
// alone, skips its listing as the standard one does (a create and a
// delete per pair); one that declares nothing lists at every acquire.
func TestIntegration_DriverShortcutsSolo(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		driver zklock.Driver
		solo   bool
	}{
		{"declared", declaringDriver{sc: zklock.Shortcuts{Solo: true}}, true},
		{"StandardDriver", zklock.StandardDriver{}, true},
		{"none", customDriver{}, false},
		{"embeds StandardDriver", embeddingDriver{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			c, cc := e.countingClient()
			e.create(e.root + "/solo") // persistent: see soloMutex
			m := e.mutex(c, "/solo", zklock.WithDriver(tc.driver))
			if tc.solo {
				soloReady(t, m)
			} else {
				soloPairs(t, m, 3)
				require.False(t, zklock.SoloReady(m), "a driver that declares no Solo is never ready")
			}
			const pairs = 20
			var d map[string]int
			for try := 1; ; try++ {
				// A reconnect during the pairs (a loaded machine's blip)
				// rightly costs the next acquire its listing: count again.
				epoch := zklock.ConnEpoch(c)
				_, before := cc.total()
				soloPairs(t, m, pairs)
				d = delta(cc, before)
				if zklock.ConnEpoch(c) == epoch || try == 3 {
					break
				}
				t.Logf("reconnected during the pairs (%v); counting again", d)
				if tc.solo {
					soloReady(t, m)
				}
			}
			want := 0
			if !tc.solo {
				want = pairs
			}
			assert.Equal(t, want, d["getChildren"], "listings in %d pairs: %v", pairs, d)
			assert.Equal(t, pairs, d["create"], "a create per pair: %v", d)
		})
	}
}

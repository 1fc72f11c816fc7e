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

package zklock_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

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
	d := zklock.StandardDriver{}
	children := []string{"locks", uuidA + "lock-0000000002", "leases", "0", "", "_c_short", uuidB + "lock-0000000001"}
	zklock.SortChildren(children, "lock-", d)
	assert.Equal(t, []string{"", "0", uuidB + "lock-0000000001", uuidA + "lock-0000000002", "_c_short", "leases", "locks"}, children)
	got, err := d.GetsTheLock(children, uuidB+"lock-0000000001", 1)
	require.NoError(t, err)
	assert.Equal(t, zklock.PredicateResult{Watch: "0"}, got)
}

// Protected and unprotected nodes (Curator, go-zk's zk.Lock) sort together
// by sequence, and equal keys keep their listing order.
func TestSortChildren_MixedAndStable(t *testing.T) {
	children := []string{
		uuidA + "lock-0000000010",
		"lock-0000000002",
		"_c_0123456789abcdef0123456789abcdef-lock-0000000005", // go-zk's format
		uuidB + "lock-0000000001",
		"x-lock-0000000005",
	}
	zklock.SortChildren(children, "lock-", zklock.StandardDriver{})
	assert.Equal(t, []string{
		uuidB + "lock-0000000001",
		"lock-0000000002",
		"_c_0123456789abcdef0123456789abcdef-lock-0000000005",
		"x-lock-0000000005",
		uuidA + "lock-0000000010",
	}, children)
}

func TestCompareUTF16(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"a", "b", -1}, {"b", "a", 1}, {"a", "a", 0}, {"a", "ab", -1}, {"", "a", -1},
		{"0000000001", "0000000002", -1},
		{"\uffff", "\U00010000", 1}, // Java: U+FFFF (FFFF) > U+10000 (D800 DC00)
		{"\ue000", "\U0001F600", 1}, // U+E000 > a surrogate pair
		{"\u00e9", "\u00ea", -1},
		{"x\U0001F600", "x\uff00", -1},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, sign(zklock.CompareUTF16(tt.a, tt.b)), "%q vs %q", tt.a, tt.b)
	}
}

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}

// javaCompare is the reference: compare UTF-16 code units.
func javaCompare(a, b string) int {
	return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
}

func FuzzCompareUTF16(f *testing.F) {
	f.Add("lock-0000000001", "lock-0000000002")
	f.Add("\uffff", "\U00010000")
	f.Add("", "\x00")
	f.Add("a\u00e9", "a\U0001F600")
	f.Fuzz(func(t *testing.T, a, b string) {
		if !utf8.ValidString(a) || !utf8.ValidString(b) {
			zklock.CompareUTF16(a, b) // must not panic
			return
		}
		if got, want := sign(zklock.CompareUTF16(a, b)), sign(javaCompare(a, b)); got != want {
			t.Fatalf("compare(%q, %q) = %d, want %d", a, b, got, want)
		}
	})
}

// The driver never panics on any listing, and its verdict agrees with the
// position of the node in the sorted listing.
func FuzzGetsTheLock(f *testing.F) {
	f.Add("locks/leases/"+uuidA+"lock-0000000001/0", 2, uint8(1))
	f.Add(uuidA+"lock-0000000001/"+uuidB+"lock-0000000000", 0, uint8(1))
	f.Add("//", 1, uint8(0))
	f.Fuzz(func(t *testing.T, joined string, pick int, maxLeases uint8) {
		children := strings.Split(joined, "/")
		d := zklock.StandardDriver{}
		zklock.SortChildren(children, "lock-", d)
		for i := 1; i < len(children); i++ {
			if zklock.CompareUTF16(d.SortKey(children[i-1], "lock-"), d.SortKey(children[i], "lock-")) > 0 {
				t.Fatalf("not sorted: %q", children)
			}
		}
		if pick < 0 {
			pick = -pick
		}
		node := children[pick%len(children)]
		res, err := d.GetsTheLock(children, node, int(maxLeases))
		switch {
		case maxLeases == 0:
			if !errors.Is(err, zklock.ErrInvalidArgument) {
				t.Fatalf("maxLeases 0: err = %v", err)
			}
		case err != nil:
			t.Fatalf("GetsTheLock: %v", err)
		case res.Acquired != (slices.Index(children, node) < int(maxLeases)):
			t.Fatalf("node %q at %d, maxLeases %d: %+v", node, slices.Index(children, node), maxLeases, res)
		case !res.Acquired && !slices.Contains(children, res.Watch):
			t.Fatalf("watch %q is not a child", res.Watch)
		}
	})
}

func TestProtectedNames(t *testing.T) {
	for range 100 {
		id := zklock.NewUUIDForTest()
		require.Len(t, id, 36)
		assert.Equal(t, strings.ToLower(id), id)
		assert.Equal(t, byte('4'), id[14], "version 4")
		assert.Contains(t, "89ab", string(id[19]), "RFC 4122 variant")
		assert.True(t, zklock.IsProtected("_c_"+id+"-lock-0000000001"))
	}
	assert.False(t, zklock.IsProtected("_c_"+strings.Repeat("a", 36)+"-lock-"))
	assert.False(t, zklock.IsProtected("lock-0000000001"))
	assert.False(t, zklock.IsProtected("_c_0123456789abcdef0123456789abcdef-lock-0000000005"))
	assert.False(t, zklock.IsProtected(uuidA))
}

func TestRetryPolicies(t *testing.T) {
	eb := zklock.ExponentialBackoff{Base: 10e6, MaxRetries: 2, MaxSleep: 25e6}
	for i := 0; i < 2; i++ {
		w, ok := eb.AllowRetry(i, 0)
		require.True(t, ok)
		assert.True(t, w >= 10e6 && w <= 25e6, "wait %v", w)
	}
	_, ok := eb.AllowRetry(2, 0)
	assert.False(t, ok)

	n := zklock.RetryNTimes{N: 1, Sleep: 5}
	w, ok := n.AllowRetry(0, 0)
	assert.True(t, ok)
	assert.EqualValues(t, 5, w)
	_, ok = n.AllowRetry(1, 0)
	assert.False(t, ok)

	u := zklock.RetryUntilElapsed{Max: 100, Sleep: 7}
	_, ok = u.AllowRetry(50, 99)
	assert.True(t, ok)
	_, ok = u.AllowRetry(0, 100)
	assert.False(t, ok)
}

func TestStringers(t *testing.T) {
	names := map[zklock.ConnectionState]string{
		zklock.StateConnected: "Connected", zklock.StateSuspended: "Suspended",
		zklock.StateReconnected: "Reconnected", zklock.StateLost: "Lost", zklock.StateClosed: "Closed",
		zklock.ConnectionState(42): "ConnectionState(42)",
	}
	for s, want := range names {
		assert.Equal(t, want, s.String())
	}
	assert.Equal(t, "StandardPolicy", zklock.StandardPolicy.String())
	assert.Equal(t, "SessionPolicy", zklock.SessionPolicy.String())
	assert.Equal(t, "ErrorPolicy(9)", zklock.ErrorPolicy(9).String())
}

package zklock_test

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/zklock/zklock"
)

// Protected and unprotected nodes (Curator, go-zk's zk.Lock) sort together
// by sequence, and equal keys keep their listing order.
func TestSortChildren_MixedAndStable(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
	f.Add("\U0001F018", "\U0001F000") // one high surrogate: the low ones decide
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

// curatorKey is Curator's StandardLockInternalsDriver.fixForSorting,
// written out again as the reference: the text after the last occurrence
// of lockName, or the whole name.
func curatorKey(child, lockName string) string {
	if i := strings.LastIndex(child, lockName); i >= 0 {
		return child[i+len(lockName):]
	}
	return child
}

// FuzzSortKey: StandardDriver's key is Curator's for any name and lock
// name, its shortcut for a name that ends in a sequence number included.
func FuzzSortKey(f *testing.F) {
	f.Add(uuidA+"lock-0000000010", "lock-")
	f.Add("lock-lock-0000000001", "lock-")
	f.Add("a1b0000000001", "1b")
	f.Add("__READ__0000000003__WRIT__0000000004", "__READ__")
	f.Add("lock-", "lock-")
	f.Add("0000000001", "")
	f.Fuzz(func(t *testing.T, child, lockName string) {
		if got, want := (zklock.StandardDriver{}).SortKey(child, lockName), curatorKey(child, lockName); got != want {
			t.Fatalf("SortKey(%q, %q) = %q, want %q", child, lockName, got, want)
		}
	})
}

// lockNames are the lock names the recipes use.
var lockNames = []string{"lock-", "__READ__", "__WRIT__", "lease-"}

// FuzzSortChildren: sorting any listing never panics, yields a
// permutation of it, in Curator's order (Java string order of the text
// after the last lock name), keeping the listing order of equal keys; and
// sortUpTo yields the sorted prefix that ends with the node's key.
func FuzzSortChildren(f *testing.F) {
	f.Add(uuidA+"lock-0000000010/lock-0000000002/garbage/lock-/lock--2147483648/"+uuidB+"lock-0000000001", uint8(0), uint8(1))
	f.Add("__READ__0000000003/"+uuidA+"__WRIT__0000000001/x__READ__0000000002", uint8(1), uint8(0))
	f.Add("lease-0000000001//lease-\uffff/lease-\U0001F600/0", uint8(3), uint8(2))
	f.Add("a/a/a", uint8(0), uint8(5))
	// Sequence numbers only, one of them twice: sorted as integers, equal
	// keys in listing order.
	f.Add(uuidA+"lock-0000000002/x-lock-0000000001/"+uuidB+"lock-0000000002/lock-0000000000/lock-lock-0000000003", uint8(0), uint8(2))
	f.Add("__READ__0000000009/__WRIT__0000000010/__READ__00000000011", uint8(1), uint8(0))
	f.Fuzz(func(t *testing.T, joined string, name, pick uint8) {
		lockName := lockNames[int(name)%len(lockNames)]
		listed := strings.Split(joined, "/")
		children := slices.Clone(listed)
		zklock.SortChildren(children, lockName, zklock.StandardDriver{})
		if !slices.Equal(slices.Sorted(slices.Values(children)), slices.Sorted(slices.Values(listed))) {
			t.Fatalf("not a permutation: %q -> %q", listed, children)
		}
		if !utf8.ValidString(joined) {
			return // ZooKeeper names are Java strings; the order is only defined for UTF-8
		}
		want := slices.Clone(listed)
		slices.SortStableFunc(want, func(a, b string) int {
			return javaCompare(curatorKey(a, lockName), curatorKey(b, lockName))
		})
		if !slices.Equal(children, want) {
			t.Fatalf("order of %q: got %q, want %q", listed, children, want)
		}
		node := listed[int(pick)%len(listed)]
		upTo := zklock.SortUpTo(slices.Clone(listed), node, lockName, zklock.StandardDriver{})
		if !slices.Contains(upTo, node) || !slices.Equal(upTo, want[:len(upTo)]) {
			t.Fatalf("sortUpTo(%q, %q) = %q, not a prefix of %q with it", listed, node, upTo, want)
		}
		for _, rest := range want[len(upTo):] {
			if javaCompare(curatorKey(rest, lockName), curatorKey(node, lockName)) <= 0 {
				t.Fatalf("sortUpTo(%q, %q) dropped %q", listed, node, rest)
			}
		}
	})
}

package zklock_test

import (
	"slices"
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

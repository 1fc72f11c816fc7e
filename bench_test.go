package zklock_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/zklock/zklock"
)

// Benchmarks of the pure functions on the lock's hot path: ordering a
// listing, deciding from it, and the name tests. They need no ZooKeeper:
//
//	go test -run XXX -bench . -benchtime 100x .

// benchLockName is the lock name of a Mutex's nodes.
const benchLockName = "lock-"

// benchUUID returns a random version-4 UUID drawn from r.
func benchUUID(r *rand.Rand) string {
	var b [16]byte
	for i := range b {
		b[i] = byte(r.UintN(256))
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// protectedListing returns n protected lock nodes, each with its own
// UUID, sequence numbers 0..n-1, in a shuffled order (as ZooKeeper lists
// children: in no particular order). The same n gives the same listing.
func protectedListing(n int) []string {
	r := rand.New(rand.NewPCG(uint64(n), 42))
	children := make([]string, n)
	for i := range children {
		children[i] = fmt.Sprintf("_c_%s-%s%010d", benchUUID(r), benchLockName, i)
	}
	r.Shuffle(n, func(i, j int) { children[i], children[j] = children[j], children[i] })
	return children
}

// BenchmarkSortChildren sorts listings of protected nodes with mixed
// UUIDs. Each iteration sorts a fresh copy of the shuffled listing (the
// copy is part of the measured time).
func BenchmarkSortChildren(b *testing.B) {
	for _, n := range []int{10, 1000, 2000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			listing := protectedListing(n)
			work := make([]string, n)
			b.ReportAllocs()
			for b.Loop() {
				copy(work, listing)
				zklock.SortChildren(work, benchLockName, zklock.StandardDriver{})
			}
		})
	}
}

// BenchmarkGetsTheLock decides for the last node of a sorted listing of
// 2000: the worst case, every node ahead of it.
func BenchmarkGetsTheLock(b *testing.B) {
	children := protectedListing(2000)
	zklock.SortChildren(children, benchLockName, zklock.StandardDriver{})
	node := children[len(children)-1]
	var d zklock.StandardDriver
	b.ReportAllocs()
	for b.Loop() {
		res, err := d.GetsTheLock(children, node, 1)
		if err != nil || res.Acquired || res.Watch != children[len(children)-2] {
			b.Fatalf("GetsTheLock = %+v, %v", res, err)
		}
	}
}

// BenchmarkSortKey extracts the sort key of one protected node.
func BenchmarkSortKey(b *testing.B) {
	child := protectedListing(1)[0]
	var d zklock.StandardDriver
	b.ReportAllocs()
	for b.Loop() {
		if key := d.SortKey(child, benchLockName); key != "0000000000" {
			b.Fatalf("SortKey = %q", key)
		}
	}
}

// BenchmarkIsProtected tests a protected name and an unprotected one.
func BenchmarkIsProtected(b *testing.B) {
	protected := protectedListing(1)[0]
	plain := "lock-0000000042"
	b.ReportAllocs()
	for b.Loop() {
		if !zklock.IsProtected(protected) || zklock.IsProtected(plain) {
			b.Fatal("IsProtected gave the wrong answer")
		}
	}
}

// BenchmarkCompareUTF16 compares sort keys that differ in their last
// ASCII digit (the common case) and keys that differ in a character above
// U+FFFF against one in U+E000..U+FFFF (the slow path).
func BenchmarkCompareUTF16(b *testing.B) {
	cases := []struct{ name, a, c string }{
		{"ascii", "0000001233", "0000001234"},
		{"surrogate", "key-\U0001F600", "key-\uff00"},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			want := strings.Compare(tc.a, tc.c) // byte order
			if tc.name == "surrogate" {
				want = -want // UTF-16 order differs from byte order here
			}
			b.ReportAllocs()
			for b.Loop() {
				if got := zklock.CompareUTF16(tc.a, tc.c); benchSign(got) != want {
					b.Fatalf("CompareUTF16(%q, %q) = %d, want sign %d", tc.a, tc.c, got, want)
				}
			}
		})
	}
}

// benchSign returns -1, 0 or 1 as n is negative, zero or positive.
func benchSign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}

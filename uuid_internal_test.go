package zklock

import (
	"regexp"
	"testing"
)

// newUUID makes random version-4 UUIDs in their canonical text, as
// Java's UUID.randomUUID().toString() writes them for Curator's prefix:
// lowercase hex, 8-4-4-4-12, the version nibble 4 and the variant 10.
func TestNewUUIDIsCanonicalV4(t *testing.T) {
	v4 := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	for range 1000 {
		u := newUUID()
		if !v4.MatchString(u) {
			t.Fatalf("newUUID() = %q, not a canonical version-4 UUID", u)
		}
		if seen[u] {
			t.Fatalf("newUUID() repeated %q", u)
		}
		seen[u] = true
	}
	// One allocation, the string; two under -race, whose instrumentation
	// moves the buffer to the heap. Sprintf made seven.
	if n := testing.AllocsPerRun(100, func() { _ = newUUID() }); n > 2 {
		t.Errorf("newUUID allocates %v times, want 1 (2 under -race)", n)
	}
}

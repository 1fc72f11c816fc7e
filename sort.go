package zklock

import (
	"slices"
)

// sortChildren sorts children by the driver's sort key, comparing keys as
// Java's String.compareTo does, and keeps the listing order of equal keys.
func sortChildren(children []string, lockName string, d Driver) {
	if sortBySequence(children, lockName, d) {
		return
	}
	type keyed struct{ key, name string }
	ks := make([]keyed, len(children))
	for i, ch := range children {
		ks[i] = keyed{d.SortKey(ch, lockName), ch}
	}
	slices.SortStableFunc(ks, func(a, b keyed) int { return compareUTF16(a.key, b.key) })
	for i := range ks {
		children[i] = ks[i].name
	}
}

// atBits is how many low bits of the integer sortBySequence sorts by
// hold the child's place in the listing; the key's value, of at most ten
// digits (under 2^34), is above them.
const atBits = 30

// sortBySequence sorts children as sortChildren does, and reports true,
// when every key is ten digits or fewer, all of one length (ZooKeeper's
// sequence numbers, "%010d"): such keys compare as their values, which
// sort as integers, each packed with its place in the listing to keep
// the order of equal keys. A long queue's every newcomer sorts all of
// it, so this is worth its special case. It reports false, having
// changed nothing, for any other listing.
func sortBySequence(children []string, lockName string, d Driver) bool {
	if len(children) < 2 || len(children) >= 1<<atBits {
		return false
	}
	packed := make([]uint64, len(children))
	width := -1
	for i, ch := range children {
		key := d.SortKey(ch, lockName)
		if width < 0 {
			width = len(key)
		}
		v, ok := digits(key)
		if !ok || len(key) != width {
			return false
		}
		packed[i] = v<<atBits | uint64(i)
	}
	slices.Sort(packed)
	sorted := make([]string, len(children))
	for i, p := range packed {
		sorted[i] = children[p&(1<<atBits-1)]
	}
	copy(children, sorted)
	return true
}

// digits returns the value of s if it is 1 to 10 ASCII digits (see
// atBits).
func digits(s string) (uint64, bool) {
	if len(s) == 0 || len(s) > 10 {
		return 0, false
	}
	var v uint64
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return 0, false
		}
		v = v*10 + uint64(s[i]-'0')
	}
	return v, true
}

// sortUpTo returns, sorted, the children that sort no later than node:
// node and the ones before it, which are all that a predicate decides from
// (see [Driver]). Later children are dropped before sorting, so a waiter at
// the head of a long queue sorts one name, not the queue. node must be
// among children; if it is not, sortUpTo returns every child, sorted, and
// the predicate reports the node missing.
func sortUpTo(children []string, node, lockName string, d Driver) []string {
	if !slices.Contains(children, node) {
		sortChildren(children, lockName, d)
		return children
	}
	key := d.SortKey(node, lockName)
	kept := children[:0]
	for _, ch := range children {
		if ch == node || compareUTF16(d.SortKey(ch, lockName), key) <= 0 {
			kept = append(kept, ch)
		}
	}
	sortChildren(kept, lockName, d)
	return kept
}

// compareUTF16 compares two strings in UTF-16 code unit order, the order of
// Java's String.compareTo. It equals byte order except where a character
// above U+FFFF meets one in U+E000..U+FFFF.
func compareUTF16(a, b string) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	if i == len(a) || i == len(b) {
		return len(a) - len(b) // one is a prefix of the other
	}
	if a[i] < 0x80 && b[i] < 0x80 {
		return int(a[i]) - int(b[i])
	}
	// Back up to the start of the differing characters.
	for i > 0 && a[i]&0xC0 == 0x80 {
		i--
	}
	ra, rb := []rune(a[i:])[0], []rune(b[i:])[0]
	if ua, ub := utf16Unit(ra), utf16Unit(rb); ua != ub {
		return int(ua) - int(ub)
	}
	// Two characters above U+FFFF with the same high surrogate: their low
	// surrogates, and so Java, order them as their code points do.
	return int(ra) - int(rb)
}

// utf16Unit returns the first UTF-16 code unit of r.
func utf16Unit(r rune) rune {
	if r >= 0x10000 {
		return 0xD800 + (r-0x10000)>>10
	}
	return r
}

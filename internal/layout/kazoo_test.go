package layout

import "testing"

func TestParseKazoo(t *testing.T) {
	for _, tc := range []struct {
		name, kind, seq string
		ok              bool
	}{
		{"0123456789abcdef0123456789abcdef__lock__0000000007", KazooLockName, "0000000007", true},
		{"0123456789abcdef0123456789abcdef__rlock__0000000012", KazooReadName, "0000000012", true},
		{"x__lock__-2147483648", KazooLockName, "-2147483648", true}, // past 2^31, as kazoo's -?\d{10}
		{"__lock__0000000001", KazooLockName, "0000000001", true},    // kazoo searches; any prefix
		{"_c_6d9e5c4a-27f4-4f6e-9d53-4a8d3c1b2e10-lock-0000000007", "", "", false},
		{"_c_6d9e5c4a-27f4-4f6e-9d53-4a8d3c1b2e10-__WRIT__0000000007", "", "", false},
		{"abc__lock__000000001", "", "", false},   // 9 digits
		{"abc__lock__00000000012", "", "", false}, // 11 digits: "__lock__" is not right before the last 10
		{"abc__lock0000000001", "", "", false},
		{"0000000001", "", "", false},
		{"", "", "", false},
	} {
		kind, seq, ok := ParseKazoo(tc.name)
		if kind != tc.kind || seq != tc.seq || ok != tc.ok {
			t.Errorf("ParseKazoo(%q) = %q, %q, %v; want %q, %q, %v", tc.name, kind, seq, ok, tc.kind, tc.seq, tc.ok)
		}
	}
}

func TestKazooGetsTheLock(t *testing.T) {
	w1, r2, w3, r4 := "a__lock__0000000001", "b__rlock__0000000002", "c__lock__0000000003", "d__rlock__0000000004"
	other := "not-a-contender"
	lock, both := []string{KazooLockName}, []string{KazooLockName, KazooReadName}
	for _, tc := range []struct {
		what     string
		children []string
		node     string
		blockers []string
		acquired bool
		watch    string
		found    bool
	}{
		{"first writer holds", []string{w3, w1, other}, w1, both, true, "", true},
		{"writer waits for the reader before it", []string{w1, r2, w3}, w3, both, false, r2, true},
		{"lock ignores readers", []string{r2, w3}, w3, lock, true, "", true},
		{"reader waits for the last writer before it", []string{w1, r2, w3, r4}, r4, lock, false, w3, true},
		{"reader is not held back by a writer after it (kazoo 649)", []string{r2, w3}, r2, lock, true, "", true},
		{"reader after the first writer", []string{w1, r2, w3}, r2, lock, false, w1, true},
		{"missing node", []string{w1}, w3, both, false, "", false},
		{"no contender", []string{other}, other, both, false, "", false},
		{"negative sequences sort first, as text", []string{"x__lock__-2147483648", "y__lock__0000000001"}, "y__lock__0000000001", lock, false, "x__lock__-2147483648", true},
	} {
		acquired, watch, found := KazooGetsTheLock(tc.children, tc.node, tc.blockers...)
		if acquired != tc.acquired || watch != tc.watch || found != tc.found {
			t.Errorf("%s: got %v, %q, %v; want %v, %q, %v", tc.what, acquired, watch, found, tc.acquired, tc.watch, tc.found)
		}
	}
}

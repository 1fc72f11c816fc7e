package layout

import "testing"

func TestIsKazooLease(t *testing.T) {
	for _, tc := range []struct {
		name string
		want bool
	}{
		{"0123456789abcdef0123456789abcdef", true},
		{"0123456789ABCDEF0123456789abcdef", false}, // uuid4().hex is lower case
		{"0123456789abcdef0123456789abcde", false},  // 31 digits
		{"0123456789abcdef0123456789abcdef0", false},
		{"0123456789abcdef0123456789abcdeg", false},
		{"0123456789abcdef0123456789abcdef__lock__0000000001", false},
		{"_c_6d9e5c4a-27f4-4f6e-9d53-4a8d3c1b2e10-lease-0000000007", false},
		{"", false},
	} {
		if got := IsKazooLease(tc.name); got != tc.want {
			t.Errorf("IsKazooLease(%q) = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestKazooSemaphoreLock(t *testing.T) {
	for path, want := range map[string]string{
		"/pool":      "/pool-__lock__",
		"/app/pool":  "/app/pool-__lock__",
		"/":          "/-__lock__", // kazoo's path + "-__lock__", as is
		"/a/b/pool/": "/a/b/pool/-__lock__",
	} {
		if got := KazooSemaphoreLock(path); got != want {
			t.Errorf("KazooSemaphoreLock(%q) = %q, want %q", path, got, want)
		}
	}
}

func TestKazooMaxLeases(t *testing.T) {
	for _, tc := range []struct {
		data string
		n    int
		ok   bool
	}{
		{"3", 3, true},
		{" 12\n", 12, true}, // Python's int() takes surrounding white space
		{"+2", 2, true},
		{"-1", -1, true},
		{"", 0, false},
		{"three", 0, false},
		{"1.5", 0, false},
	} {
		n, ok := KazooMaxLeases([]byte(tc.data))
		if n != tc.n || ok != tc.ok {
			t.Errorf("KazooMaxLeases(%q) = %d, %v; want %d, %v", tc.data, n, ok, tc.n, tc.ok)
		}
	}
}

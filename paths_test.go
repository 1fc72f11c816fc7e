package zklock_test

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/zklock/zklock"
)

// maxPathLen is paths.go's limit on a path's length.
const maxPathLen = 32 << 10

// pathRulesBroken returns why an accepted path breaks ZooKeeper's rules,
// or "" if it keeps them.
func pathRulesBroken(p string) string {
	switch {
	case !strings.HasPrefix(p, "/"):
		return "does not start with /"
	case len(p) > maxPathLen:
		return "too long"
	case !utf8.ValidString(p):
		return "not UTF-8"
	case strings.ContainsRune(p, 0):
		return "has NUL"
	case p == "/":
		return ""
	case strings.HasSuffix(p, "/"):
		return "trailing /"
	}
	for _, seg := range strings.Split(p[1:], "/") {
		if seg == "" || seg == "." || seg == ".." {
			return "segment " + `"` + seg + `"`
		}
	}
	return ""
}

// FuzzValidatePath: path validation never panics; an accepted path keeps
// ZooKeeper's rules; a refused one wraps ErrInvalidPath. Under an accepted
// namespace, a lock path maps to a path inside /namespace that maps back
// to the input, so no lock path can escape the namespace.
func FuzzValidatePath(f *testing.F) {
	for _, seed := range [][2]string{
		{"/locks/a", "app"}, {"", ""}, {"/", "a/../b"}, {"/a//b", "/x"}, {"/zookeeper/q", "a/"},
		{"/a\x00b", "a\x00"}, {"/..", ".."}, {"/a/.", "../x"}, {"/\u00e9/\U0001F600", "a//b"},
		{"/a/../../b", "ns/sub"}, {"/../x", "/"}, {"relative", "a/./b"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, p, ns string) {
		err := zklock.ValidatePath(p)
		if err != nil {
			if !errors.Is(err, zklock.ErrInvalidPath) || strings.Count(err.Error(), "zklock:") != 1 || !strings.Contains(err.Error(), "zklock: invalid path ") {
				t.Fatalf("ValidatePath(%q) = %v: want an ErrInvalidPath naming the path", p, err)
			}
		} else if why := pathRulesBroken(p); why != "" {
			t.Fatalf("ValidatePath accepted %q, which %s", p, why)
		}
		lerr := zklock.ValidateLockPath(p)
		if (lerr == nil) != (err == nil && p != "/") {
			t.Fatalf("ValidateLockPath(%q) = %v, ValidatePath = %v", p, lerr, err)
		}
		checkNamespace(t, ns, p, lerr == nil)
	})
}

// checkNamespace checks how WithNamespace(ns) maps the lock path p.
func checkNamespace(t *testing.T, ns, p string, valid bool) {
	root, full, rel, err := zklock.NamespacePaths(ns, p)
	if err != nil {
		if !errors.Is(err, zklock.ErrInvalidArgument) {
			t.Fatalf("WithNamespace(%q) = %v: want ErrInvalidArgument", ns, err)
		}
		return
	}
	if root != "" {
		if why := pathRulesBroken(root); why != "" || root == "/" {
			t.Fatalf("WithNamespace(%q) accepted, root %q %s", ns, root, why)
		}
		if root != "/"+strings.TrimPrefix(ns, "/") {
			t.Fatalf("WithNamespace(%q) gave root %q", ns, root)
		}
	} else if strings.TrimPrefix(ns, "/") != "" {
		t.Fatalf("WithNamespace(%q) gave no namespace", ns)
	}
	if !valid {
		return
	}
	if root != "" && !strings.HasPrefix(full, root+"/") {
		t.Fatalf("namespace %q, path %q: full path %q escapes %q", ns, p, full, root)
	}
	if why := pathRulesBroken(full); why != "" && len(full) <= maxPathLen {
		t.Fatalf("namespace %q, path %q: full path %q %s", ns, p, full, why)
	}
	if rel != p {
		t.Fatalf("namespace %q, path %q: full %q maps back to %q", ns, p, full, rel)
	}
}

package zktest

import (
	"regexp"
	"testing"
	"time"

	izk "github.com/zklock/zklock/internal/zktest"
)

// rootWait bounds how long a root's clean-up waits for the test's
// ephemeral nodes to go.
const rootWait = 10 * time.Second

// unsafeName matches what a test name may hold that a znode name should
// not.
var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_.-]`)

// Root returns a path of t's own, "/zktest/<test name>", where the test
// keeps its nodes (its locks' paths, or a Client's namespace). Whatever an
// earlier run left there is deleted first. When the test ends, Root
// checks that no ephemeral node is left under the path, waiting up to ten
// seconds for the sessions still open to delete theirs (an orphan lock
// node fails the test, with its path), and then deletes the whole tree.
// Clean-ups run last registered first: a Client whose Close was
// registered before Root (by a helper that connects, say) is still open
// at the check, which is where a node it failed to delete shows; closing
// a Client ends its session, and the server deletes its nodes.
func (c *Cluster) Root(t testing.TB) string {
	t.Helper()
	root := "/zktest/" + unsafeName.ReplaceAllString(t.Name(), "_")
	admin := izk.ConnectT(t, c.Servers())
	if err := izk.DeleteTree(admin, root); err != nil {
		t.Fatalf("zktest: root %s: %v", root, err)
	}
	if err := izk.CreatePath(admin, root); err != nil {
		t.Fatalf("zktest: root %s: %v", root, err)
	}
	t.Cleanup(func() {
		izk.WaitNoEphemerals(t, admin, root, rootWait)
		if err := izk.DeleteTree(admin, root); err != nil {
			t.Errorf("zktest: root %s: %v", root, err)
		}
	})
	return root
}

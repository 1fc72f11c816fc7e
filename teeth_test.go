package zklock_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zklock/zklock/internal/mutants"
	"github.com/zklock/zklock/internal/zktest"
)

// faultTeeth pairs each fault test of the election and of the lock's solo
// path with the deliberately broken variants of the library
// (internal/mutants)
// that it must catch: for the election, each is a naive handling of the
// Curator bug the test is named after; for the solo path, each drops one
// condition of its proof (solo.go).
var faultTeeth = []struct {
	test    string
	mutants []teethMutant
}{
	// CURATOR-696: Campaign grants a node of another session.
	{"TestIntegration_ElectionOtherSessionNodeNotGranted", []teethMutant{
		{"oldsession", "the leader's node belongs to the current session"}}},
	// CURATOR-620/653: one that is second in line leads too; CURATOR-644/645:
	// a waiter queues again whenever the node before it goes.
	{"TestIntegration_ElectionReconnectStorm", []teethMutant{
		{"twoholders", "two leaders at once"},
		{"resetstorm", "no reset storm"}}},
	// CURATOR-724: a deleted election path is not created again.
	{"TestIntegration_ElectionPathWiped", []teethMutant{
		{"norecreate", "node does not exist"}}},
	// CURATOR-498: a closing session's node, found by the protection
	// prefix after a lost reply, is adopted.
	{"TestIntegration_ProtectedCreateFindsOtherSessionsNode", []teethMutant{
		{"dyingnode", "the other session's node was deleted"}}},
	// CURATOR-498 on an ensemble: a session's create, delayed by a
	// follower that lags, lands after the client moved on to a new
	// session; the node found by its prefix is the old session's, alive.
	{"TestIntegration_EnsembleProtectedCreateFindsOldSessionsNode", []teethMutant{
		{"dyingnode", "the old session's node is deleted at once"}}},
	// CURATOR-696 on an ensemble: the owner's read of a node granted at
	// once goes out again on a new session, to a follower that lags and
	// still shows the old session's node.
	{"TestIntegration_EnsembleElectionOldSessionNodeOnLaggingFollower", []teethMutant{
		{"oldsession", "Campaign does not lead on the old session's node"}}},
	// CURATOR-498 too: a create whose reply was lost is sent again instead
	// of finding its node, which then stands unseen before the new one.
	{"TestIntegration_ElectionLostCreateReply", []teethMutant{
		{"noprotect", "a does not lead once the leader resigned: 2 creates"}}},
	// An acquire begun in an outage that outlives the session records its
	// node under the old session, and gives its place up when granted.
	// So does one whose create goes out on a new session.
	{"TestIntegration_EdgeSuspendedAcquireKeepsPlace", []teethMutant{
		{"presession", "B lost its place in the queue"}}},
	{"TestIntegration_EdgeSessionReplacedDuringCreate", []teethMutant{
		{"presession", "B lost its place in the queue"}}},
	// CURATOR-518/671: Selector.Run stops after a lost term.
	{"TestIntegration_SelectorRequeues", []teethMutant{
		{"norequeue", `only "b" within`}}},
	// The solo path trusts the parent's watch after it fired, any
	// sequence number, or a last node that still stands.
	{"TestIntegration_SoloParentRecreated", []teethMutant{
		{"soloblind", "the other participant holds the lock"}}},
	{"TestIntegration_SoloOtherHolderIsListed", []teethMutant{
		{"solonoseq", "the other participant holds the lock"}}},
	{"TestIntegration_SoloTwoMutexesOfOneClient", []teethMutant{
		{"solostanding", "the other Mutex's hold stands"}}},
	{"TestIntegration_SoloSameMutexWaits", []teethMutant{
		{"solostanding", "the first hold stands"}}},
	// A hold granted at once relies on its parent's child watch, and
	// does not hear it fire.
	{"TestIntegration_HeldAtOnceFollowsParent", []teethMutant{
		{"parentblind", "context not done within"}}},
	// And a watch on another parent, or set on another connection.
	{"TestSoloProof", []teethMutant{
		{"soloczxid", "the watch is on another parent"},
		{"soloanyconn", "the watch was set on an earlier connection"}}},
}

// ensembleTeeth are the tests of faultTeeth that start an ensemble of
// their own, with settings no shared server has (local sessions, a
// follower that lags): they run without ZK_SERVERS, which would make them
// skip, one at a time, and not at all where ZK_SERVERS is set (they skip
// there too).
var ensembleTeeth = map[string]bool{
	"TestIntegration_EnsembleProtectedCreateFindsOldSessionsNode":     true,
	"TestIntegration_EnsembleElectionOldSessionNodeOnLaggingFollower": true,
}

// teethMutant is a broken variant (its ZKLOCK_MUTANT name) and a text that
// the failure it causes must show, so that it fails for the right reason.
type teethMutant struct {
	name, want string
}

// TestFaultTeeth proves that the election's and the solo path's fault
// tests fail on a naive implementation. It builds this package's tests
// with every variant of internal/mutants (the go command's -overlay: the
// library's own source has none), runs them once without a mutant (they
// must pass, so that a failure
// below is the mutant's doing), and then runs each test with each of its
// mutants: the test must fail, with the expected message. The runs use this
// binary's shared ZooKeeper, except those of ensembleTeeth, which start
// their own ensembles, first and one at a time; each test runs in one
// process at a time, since its znodes are named after it.
func TestFaultTeeth(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the election and solo fault tests again, against broken variants")
	}
	bin := filepath.Join(t.TempDir(), "zklock-mutant.test")
	for _, tc := range faultTeeth {
		for _, m := range tc.mutants {
			require.Contains(t, mutants.Names(), m.name, "%s's mutant is not in internal/mutants", tc.test)
		}
	}
	overlay, err := mutants.Overlay(".", t.TempDir())
	require.NoError(t, err)
	build, err := exec.Command("go", "test", "-c", "-overlay", overlay, "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "go test -c -overlay (internal/mutants): %s", build)
	servers := strings.Join(zktest.Shared(t).Servers(), ",")
	external := os.Getenv("ZK_SERVERS") != ""

	var shared, own []string
	for _, tc := range faultTeeth {
		switch {
		case !ensembleTeeth[tc.test]:
			shared = append(shared, tc.test)
		case !external:
			own = append(own, tc.test)
		}
	}
	out, err := runMutantTests(bin, servers, "", shared...)
	require.NoError(t, err, "without a mutant, the tests must pass:\n%s", out)
	for _, test := range own {
		out, err := runMutantTests(bin, "", "", test)
		require.NoError(t, err, "without a mutant, the tests must pass:\n%s", out)
		require.Contains(t, out, "--- PASS: "+test, "without a mutant, %s must pass, not skip:\n%s", test, out)
	}

	for _, tc := range faultTeeth {
		t.Run(tc.test, func(t *testing.T) {
			servers := servers
			if ensembleTeeth[tc.test] {
				if external {
					t.Skip("starts an ensemble of its own, and ZK_SERVERS is set")
				}
				servers = "" // and not in parallel: three servers each
			} else {
				t.Parallel()
			}
			for _, m := range tc.mutants {
				out, err := runMutantTests(bin, servers, m.name, tc.test)
				var exit *exec.ExitError
				require.True(t, errors.As(err, &exit), "ZKLOCK_MUTANT=%s: %s must fail, got %v:\n%s", m.name, tc.test, err, out)
				require.Contains(t, out, "--- FAIL: "+tc.test, "ZKLOCK_MUTANT=%s: the test itself must fail:\n%s", m.name, out)
				require.Contains(t, out, m.want, "ZKLOCK_MUTANT=%s: %s failed for another reason:\n%s", m.name, tc.test, out)
				t.Logf("ZKLOCK_MUTANT=%s: caught: %s", m.name, lineWith(out, m.want))
			}
		})
	}
}

// runMutantTests runs the named tests of the test binary bin, verbosely,
// against the ZooKeeper servers ("": servers of their own, without
// ZK_SERVERS), with ZKLOCK_MUTANT=mutant ("": none), and returns their
// output.
func runMutantTests(bin, servers, mutant string, tests ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-test.run", "^("+strings.Join(tests, "|")+")$", "-test.timeout", "2m", "-test.v")
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "ZK_SERVERS=") })
	cmd.Env = append(cmd.Env, "ZKLOCK_MUTANT="+mutant)
	if servers != "" {
		cmd.Env = append(cmd.Env, "ZK_SERVERS="+servers)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// lineWith returns the first line of out that contains s, trimmed.
func lineWith(out, s string) string {
	for line := range strings.Lines(out) {
		if strings.Contains(line, s) {
			return strings.TrimSpace(line)
		}
	}
	return ""
}

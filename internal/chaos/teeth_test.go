package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zklock/zklock/internal/mutants"
)

// TestChaosTeeth proves that the chaos suite catches what it is meant to
// catch. It builds this command with every variant of internal/mutants
// (the go command's -overlay), where ZKLOCK_MUTANT turns on one
// deliberately broken line of the library, runs the suite briefly against each
// broken variant, and requires a failure of the right kind:
//
//   - holdlost: Client.holdLost never reports a loss, so a hold learns of
//     its session's end only when the connection comes back. A holder's
//     session paused for longer than its timeout must show up as an
//     unsignalled loss: another was granted while it still believed.
//   - twoholders: the second in a lock's queue is granted too.
//   - orphans: an acquire that is cancelled leaves its node behind.
//   - extralease: the semaphore grants one lease too many.
//
// Each runs on an ensemble of its own, one at a time. make test runs it
// in its chaos-short target.
func TestChaosTeeth(t *testing.T) {
	if testing.Short() {
		t.Skip("the chaos suite takes minutes")
	}
	bin := filepath.Join(t.TempDir(), "chaos-mutant")
	overlay, err := mutants.Overlay("../..", t.TempDir())
	require.NoError(t, err)
	build := exec.Command("go", "build", "-overlay", overlay, "-o", bin, ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build -overlay (internal/mutants): %s", out)
	noFaults := []string{"-no-faults", "-duration", "10s"}
	for _, tc := range []struct {
		mutant string
		args   []string
		want   string // the violation kind it must cause
	}{
		// Without maximum hold times: one would end, on its timer, the
		// holds the mutant never tells of their loss, and hide it.
		{"holdlost", []string{"-only", strconv.Itoa(int(pauseHolderLong)), "-duration", "45s", "-long-every", "2", "-calm", "1s", "-no-max-hold"}, violUnsignalled},
		{"twoholders", noFaults, violTwoHolders},
		{"orphans", noFaults, "orphans"},
		// Without them too: a lease ended on its timer while the extra one
		// stood made the checker file the excess as an unsignalled loss
		// (one CI run).
		{"extralease", []string{"-no-faults", "-duration", "10s", "-no-max-hold"}, violLeases},
	} {
		t.Run(tc.mutant, func(t *testing.T) {
			args := append([]string{"-seed", "15", "-load-waiters", "0"}, tc.args...)
			args = append(args, "-html-dir", t.TempDir())
			kinds, out := runMutant(t, bin, tc.mutant, args)
			require.Positive(t, kinds[tc.want], "ZKLOCK_MUTANT=%s %s %v was not caught as %q:\n%s", tc.mutant, bin, args, tc.want, out)
			if tc.mutant != "orphans" { // a node left behind is no history's business
				require.Contains(t, out, "porcupine refused: smallest failing partition", "ZKLOCK_MUTANT=%s: the second judge did not refuse the history:\n%s", tc.mutant, out)
			}
			t.Logf("ZKLOCK_MUTANT=%s chaos %v: caught:%s", tc.mutant, args, kindsLine.FindStringSubmatch(out)[1])
		})
	}
}

// kindsLine is the report's summary of what the checker found.
var kindsLine = regexp.MustCompile(`(?m)^violation kinds:(.*)$`)

// runMutant runs the chaos command bin with ZKLOCK_MUTANT=mutant and
// returns the report's violation counts by kind, and its output. The run
// must fail with status 1: the checker found something, and nothing else
// went wrong.
func runMutant(t *testing.T, bin, mutant string, args []string) (map[string]int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "ZKLOCK_MUTANT="+mutant, "ZK_SERVERS=")
	b, err := cmd.CombinedOutput()
	out := string(b)
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit) && exit.ExitCode() == 1, "ZKLOCK_MUTANT=%s: want exit status 1 (caught), got %v:\n%s", mutant, err, out)
	m := kindsLine.FindStringSubmatch(out)
	require.NotNil(t, m, "no violation kinds in the report:\n%s", out)
	kinds := map[string]int{}
	for _, kv := range regexp.MustCompile(` ([^=;]+)=(\d+)`).FindAllStringSubmatch(m[1], -1) {
		kinds[kv[1]], _ = strconv.Atoi(kv[2])
	}
	return kinds, out
}

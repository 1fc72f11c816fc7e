package main

import (
	"bufio"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zklock/zklock/internal/exampleenv"
	"github.com/zklock/zklock/internal/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

// The printed metrics count exactly what the workload did, and the
// histograms are well formed.
func TestIntegration_Metrics(t *testing.T) {
	text := exampleenv.RunT(t, run, root)
	samples := parse(t, text)

	n := strconv.Itoa(sessions * turns)
	for series, want := range map[string]string{
		`zklock_acquisitions_total{path="/examples/metrics/orders"}`:            n,
		`zklock_acquire_started_total{path="/examples/metrics/orders"}`:         n,
		`zklock_releases_total{path="/examples/metrics/orders"}`:                n,
		`zklock_acquisitions_total{path="/examples/metrics/revocable"}`:         "1",
		`zklock_releases_total{path="/examples/metrics/revocable"}`:             "1",
		`zklock_revocation_requests_total{path="/examples/metrics/revocable"}`:  "1",
		`zklock_acquisitions_total{path="/examples/metrics/fragile"}`:           "1",
		`zklock_losses_total{path="/examples/metrics/fragile"}`:                 "1",
		`zklock_delete_retries_total`:                                           "0",
		`zklock_observer_dropped_events_total`:                                  "0",
		`zklock_wait_seconds_count{path="/examples/metrics/orders"}`:            n,
		`zklock_wait_seconds_bucket{path="/examples/metrics/orders",le="+Inf"}`: n,
		`zklock_hold_seconds_count{path="/examples/metrics/orders"}`:            n,
		`zklock_hold_seconds_count{path="/examples/metrics/fragile"}`:           "1",
	} {
		assert.Equal(t, want, samples[series], series)
	}
	_, ok := samples[`zklock_releases_total{path="/examples/metrics/fragile"}`]
	assert.False(t, ok, "a lost hold is not released")

	// Buckets are cumulative: never decreasing, ending at the count.
	for _, name := range []string{"zklock_wait_seconds", "zklock_hold_seconds"} {
		prev := -1
		for _, le := range []string{"0.001", "0.005", "0.01", "0.05", "0.1", "0.5", "1", "5", "+Inf"} {
			v, err := strconv.Atoi(samples[name+`_bucket{path="/examples/metrics/orders",le="`+le+`"}`])
			require.NoError(t, err, le)
			assert.GreaterOrEqual(t, v, prev, name+" le="+le)
			prev = v
		}
	}
	assert.Contains(t, text, "# TYPE zklock_wait_seconds histogram\n")
	assert.Contains(t, text, "# TYPE zklock_losses_total counter\n")
}

// parse reads the exposition lines of text into series -> value.
func parse(t *testing.T, text string) map[string]string {
	t.Helper()
	samples := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "zklock_") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		require.Positive(t, i, line)
		samples[line[:i]] = line[i+1:]
	}
	return samples
}

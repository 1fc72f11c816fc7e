package zktest

import (
	"context"
	"fmt"
)

// Partitioner is implemented by clusters whose servers can be cut off from
// each other: those the process backend starts with [Config.Isolatable].
// Its methods are safe for concurrent use, also with the Cluster's.
type Partitioner interface {
	// Isolate cuts server i off from every other server, in both
	// directions: packets between them are dropped, new connections
	// between them fail at once, and established ones stall until
	// ZooKeeper's own timeouts (a few ticks) end them. The client port
	// stays reachable from the test process, so clients connected
	// directly or through a Proxy keep talking to the isolated server
	// (which stops serving once it notices it has lost the quorum).
	// Isolating an isolated server is a no-op; isolating several
	// servers cuts each of them off from all others. Isolate survives
	// Stop, Start and Kill of any server.
	Isolate(i int) error
	// Heal restores every link cut by Isolate. The servers then find
	// each other again by themselves; Heal does not wait for that (see
	// [Leader] and [WaitServing]).
	Heal() error
}

// Leader returns the index in c.Servers() of the leader: the server whose
// srvr four-letter word reports Mode "leader". It polls every server until
// exactly one of them does, so it waits out an election. It gives up when
// ctx is done, or after a minute if ctx has no deadline, returning an error
// wrapping ctx's error that says what the servers last reported.
//
// Just after a partition, an isolated old leader may still report
// "leader" for a few ticks while the others have not yet elected a new
// one: compare the result with the old leader when that matters.
func Leader(ctx context.Context, c Cluster) (int, error) {
	ctx, cancel := withDefaultTimeout(ctx, defaultWaitTimeout)
	defer cancel()
	servers := c.Servers()
	leader := -1
	err := poll(ctx, func() error {
		var leaders []int
		modes := make([]string, len(servers))
		for i, s := range servers {
			m, err := mode(ctx, s, fourLetterTimeout)
			if err != nil {
				m = "not serving"
			}
			modes[i] = m
			if m == "leader" {
				leaders = append(leaders, i)
			}
		}
		if len(leaders) != 1 {
			return fmt.Errorf("zktest: leader: want one leader, servers report %q", modes)
		}
		leader = leaders[0]
		return nil
	}, nil)
	if err != nil {
		return -1, err
	}
	return leader, nil
}

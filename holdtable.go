package zklock

import "sync/atomic"

// holdTable is the part of a Client that knows its holds: how many stand,
// per lock (lives, for re-entry across values of one lock) and in all,
// what each lock taken alone left behind (solos), how the holds' nodes
// are followed (holds), and Close's account of the holds it cut short.
// Each field is a type with its own lock, written by its own methods:
// liveTable (hold.go), soloTable (solo.go), holdWatch (holdwatch.go),
// cutShort (shutdown.go). holding is counted by hold.go as holds are
// granted and end; fencing is set once, by holdwatch.go. holds is made by
// init and never replaced.
type holdTable struct {
	lives   liveTable    // holds that stand, per lock
	solos   soloTable    // what the Client knows of each lock it takes alone (see solo)
	holding atomic.Int64 // holds that stand, in all
	cut     cutShort     // the holds that closing cut short, for Shutdown and Close's record
	fencing atomic.Bool  // a token was asked: holds learn theirs as they are granted (see holdWatch.learn)
	holds   *holdWatch   // follows the nodes of the holds, and ends those lost
}

func (t *holdTable) init(c *Client) { t.holds = newHoldWatch(c, false) }

// routeHolds tells the hold watch, before the Client starts, that the
// session's node events reach it through the Client's own dispatch
// (zklock's session), not through each watch's channel.
func (t *holdTable) routeHolds() { t.holds.routed = true }

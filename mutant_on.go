//go:build zklock_mutant

package zklock

import "os"

// mutantName names the broken variant that a build with the zklock_mutant
// tag runs, from ZKLOCK_MUTANT. The chaos suite's TestChaosTeeth uses
// "holdlost", "twoholders", "orphans" and "extralease"; the fault tests'
// TestFaultTeeth uses "twoholders" too, and "oldsession" (a
// leader's node granted whatever session owns it, CURATOR-696),
// "resetstorm" (a waiter queues again when the node before it goes,
// CURATOR-644/645), "norecreate" (a deleted lock path is never created
// again, CURATOR-724), "dyingnode" (a node found by its protection prefix
// is adopted whatever session owns it, CURATOR-498) and "norequeue"
// (Selector.Run ends after a lost term, CURATOR-518/671), "presession"
// (an acquire creates its node while disconnected and records it under
// the session from before its create), and for the
// solo path "soloblind" (the parent's watch is trusted after it fired),
// "solonoseq" (any sequence number proves), "solostanding" (our last node
// counts as gone while it stands), "soloczxid" (a watch on another parent
// proves) and "soloanyconn" (a watch set on another connection proves),
// and "parentblind" (a hold granted at once never hears its parent's child
// watch fire).
// Never build a release with this tag.
var mutantName = os.Getenv("ZKLOCK_MUTANT")

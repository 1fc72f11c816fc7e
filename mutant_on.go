//go:build zklock_mutant

package zklock

import "os"

// mutantName names the broken variant that a build with the zklock_mutant
// tag runs, from ZKLOCK_MUTANT. The chaos suite's TestChaosTeeth uses
// "holdlost", "twoholders", "orphans" and "extralease"; the election fault
// tests' TestElectionTeeth uses "twoholders" too, and "oldsession" (a
// leader's node granted whatever session owns it, CURATOR-696),
// "resetstorm" (a waiter queues again when the node before it goes,
// CURATOR-644/645), "norecreate" (a deleted lock path is never created
// again, CURATOR-724), "dyingnode" (a node found by its protection prefix
// is adopted whatever session owns it, CURATOR-498) and "norequeue"
// (Selector.Run ends after a lost term, CURATOR-518/671). Never build a
// release with this tag.
var mutantName = os.Getenv("ZKLOCK_MUTANT")

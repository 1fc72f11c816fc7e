//go:build zklock_mutant

package zklock

import "os"

// mutantName names the broken variant that a build with the zklock_mutant
// tag runs, from ZKLOCK_MUTANT: "holdlost", "twoholders", "orphans" or
// "extralease" (see the chaos suite's TestChaosTeeth). Never build a
// release with this tag.
var mutantName = os.Getenv("ZKLOCK_MUTANT")

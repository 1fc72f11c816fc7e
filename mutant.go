package zklock

// mutant reports whether the test-only broken variant called name is on.
// Only a build with the zklock_mutant tag can turn one on (see
// mutant_on.go), for the chaos suite's self-test (internal/chaos,
// TestChaosTeeth), which checks that the suite catches each. In every
// other build mutantName is the constant "", so the compiler removes the
// broken branches.
func mutant(name string) bool { return mutantName != "" && mutantName == name }

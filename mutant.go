package zklock

// mutant reports whether the test-only broken variant called name is on.
// Only a build with the zklock_mutant tag can turn one on (see
// mutant_on.go), for the self-tests that check that a test suite catches
// each: the chaos suite's (internal/chaos, TestChaosTeeth) and the fault
// tests of the election and the solo path (TestFaultTeeth). In every
// other build mutantName is the constant "", so the compiler removes the
// broken branches.
func mutant(name string) bool { return mutantName != "" && mutantName == name }

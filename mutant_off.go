//go:build !zklock_mutant

package zklock

// mutantName is empty in normal builds: no broken variant exists.
const mutantName = ""

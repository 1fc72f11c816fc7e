//go:build race

package main

// With the race detector on, the binary under test gets it too.
func init() { buildFlags = append(buildFlags, "-race") }

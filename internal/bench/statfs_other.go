//go:build !linux

package main

import "os"

// fsType reports "unknown" outside Linux, or "missing" if dir does not exist.
func fsType(dir string) string {
	if _, err := os.Stat(dir); err != nil {
		return "missing"
	}
	return "unknown"
}

//go:build !linux

package main

import (
	"errors"
	"time"
)

// processCPU is measured on Linux only.
func processCPU(int) (time.Duration, error) {
	return 0, errors.New("process CPU time is read from /proc, on Linux only")
}

//go:build !linux

package main

import "errors"

// pin is Linux's only (sched_setaffinity).
func pin(int, []int) (string, error) {
	return "", errors.New("-server-cpus: only on Linux")
}

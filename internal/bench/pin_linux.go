//go:build linux

package main

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"syscall"
	"unsafe"
)

// pin gives the server's process (every thread, and the threads they
// start) the CPUs in server, and this process, with the clients it runs
// and the harnesses it starts later, every other CPU it may use. It
// returns how the CPUs were split, for the report.
func pin(serverPID int, server []int) (string, error) {
	online := runtime.NumCPU() // this process's CPUs when it started
	var clients []int
	for c := 0; c < online; c++ {
		if !slices.Contains(server, c) {
			clients = append(clients, c)
		}
	}
	for _, c := range server {
		if c < 0 || c >= online {
			return "", fmt.Errorf("-server-cpus: CPU %d: this process may use CPUs 0 to %d", c, online-1)
		}
	}
	if len(clients) == 0 {
		return "", fmt.Errorf("-server-cpus: no CPU left for the clients")
	}
	if err := pinTasks(strconv.Itoa(serverPID), server); err != nil {
		return "", fmt.Errorf("pin the server: %w", err)
	}
	if err := pinTasks("self", clients); err != nil {
		return "", fmt.Errorf("pin the clients: %w", err)
	}
	runtime.GOMAXPROCS(len(clients))
	return fmt.Sprintf("server on CPUs %v, clients (this process and the harnesses it starts) on %v", server, clients), nil
}

// pinTasks sets the affinity of every thread of process pid ("self" for
// this one) to cpus. A thread started later inherits its starter's.
func pinTasks(pid string, cpus []int) error {
	tasks, err := os.ReadDir("/proc/" + pid + "/task")
	if err != nil {
		return err
	}
	var mask [16]uint64 // 1024 CPUs, the kernel's cpu_set_t
	for _, c := range cpus {
		mask[c/64] |= 1 << (c % 64)
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		_, _, errno := syscall.RawSyscall(syscall.SYS_SCHED_SETAFFINITY, uintptr(tid), unsafe.Sizeof(mask), uintptr(unsafe.Pointer(&mask)))
		if errno != 0 && errno != syscall.ESRCH { // a thread that ended meanwhile
			return fmt.Errorf("thread %d: %w", tid, errno)
		}
	}
	return nil
}

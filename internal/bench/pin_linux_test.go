//go:build linux

package main

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// TestPinTasks pins a child process, as -server-cpus pins the server,
// and reads the kernel's account of where it may run.
func TestPinTasks(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("one CPU: nothing to split")
	}
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	pid := strconv.Itoa(cmd.Process.Pid)
	allowed := func() string {
		b, err := os.ReadFile("/proc/" + pid + "/status")
		if err != nil {
			t.Fatal(err)
		}
		for l := range strings.SplitSeq(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "Cpus_allowed_list:"); ok {
				return strings.TrimSpace(v)
			}
		}
		t.Fatal("no Cpus_allowed_list")
		return ""
	}
	for _, tc := range []struct {
		cpus []int
		want string
	}{{[]int{1}, "1"}, {[]int{0}, "0"}} {
		if err := pinTasks(pid, tc.cpus); err != nil {
			t.Fatal(err)
		}
		if got := allowed(); got != tc.want {
			t.Errorf("pinned to %v: the kernel allows %q", tc.cpus, got)
		}
	}
	// Refused before anything is pinned: this process stays where it is.
	if _, err := pin(cmd.Process.Pid, []int{runtime.NumCPU()}); err == nil {
		t.Error("a CPU past the last: no error")
	}
	if _, err := pin(cmd.Process.Pid, []int{0, 1}); runtime.NumCPU() == 2 && err == nil {
		t.Error("no CPU left for the clients: no error")
	}
}

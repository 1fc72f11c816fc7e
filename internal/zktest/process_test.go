//go:build unix

package zktest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fakeJava writes a shell script standing in for java and returns an
// install that runs it.
func fakeJava(t *testing.T, script string) *install {
	t.Helper()
	path := filepath.Join(t.TempDir(), "java")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	return &install{java: path, classpath: []string{"zookeeper.jar"}}
}

// ownTempDirs lists this process's cluster directories.
func ownTempDirs(t *testing.T) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(os.TempDir(), tempDirPrefix+strconv.Itoa(os.Getpid())+"-*"))
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

func checkNoNewDirs(t *testing.T, before []string) {
	t.Helper()
	if after := ownTempDirs(t); !slices.Equal(before, after) {
		t.Errorf("temp dirs before %v, after %v: a failed start left its directory", before, after)
	}
}

func TestStartFailureReportsLogTail(t *testing.T) {
	before := ownTempDirs(t)
	inst := fakeJava(t, "echo starting\necho 'fatal: something broke' >&2\nexit 1\n")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := startInstall(ctx, inst, Config{Size: 2})
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"zktest: start server", "server exited", "tail of", "fatal: something broke"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	if errors.Is(err, errBind) {
		t.Errorf("error %v wraps errBind", err)
	}
	checkNoNewDirs(t, before)
}

func TestStartRetriesBindFailure(t *testing.T) {
	before := ownTempDirs(t)
	count := filepath.Join(t.TempDir(), "count")
	inst := fakeJava(t, "echo run >> "+count+"\necho 'java.net.BindException: Address already in use'\nexit 1\n")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := startInstall(ctx, inst, Config{})
	if !errors.Is(err, errBind) {
		t.Fatalf("error %v, want one wrapping errBind", err)
	}
	b, err := os.ReadFile(count)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "run"); n != startAttempts {
		t.Errorf("%d attempts, want %d", n, startAttempts)
	}
	checkNoNewDirs(t, before)
}

func TestStartTimeoutKillsServers(t *testing.T) {
	before := ownTempDirs(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	inst := fakeJava(t, "echo $$ > "+pidFile+"\nexec sleep 600\n")
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err := startInstall(ctx, inst, Config{})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want a deadline", err)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	// Gone means killed and reaped: a zombie would still have its pid.
	if !processGone(pid) {
		t.Errorf("server pid %d still exists after a failed start", pid)
	}
	checkNoNewDirs(t, before)
}

func TestSweepStaleDirs(t *testing.T) {
	// A pid that is certainly not running: a reaped child's.
	inst := fakeJava(t, "exit 0\n")
	j, err := startJVM(inst.java, nil, filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	if !j.wait(10 * time.Second) {
		t.Fatal("child did not exit")
	}
	dead := j.cmd.Process.Pid
	stale, err := os.MkdirTemp("", tempDirPrefix+strconv.Itoa(dead)+"-")
	if err != nil {
		t.Fatal(err)
	}
	live, err := os.MkdirTemp("", tempDirPrefix+strconv.Itoa(os.Getppid())+"-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(live)
	defer os.RemoveAll(stale)
	if !processGone(dead) {
		t.Skipf("pid %d was reused", dead)
	}
	sweepStaleDirs(os.TempDir())
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale dir %s survived the sweep: %v", stale, err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("live process's dir %s was swept: %v", live, err)
	}
}

func TestIntegration_CrashReported(t *testing.T) {
	if len(externalServers()) > 0 {
		t.Skip("ZK_SERVERS is set")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := startProcess(ctx, Config{})
	if err != nil {
		t.Fatal(err)
	}
	j := c.(*procCluster).nodes[0].proc
	if err := j.cmd.Process.Kill(); err != nil { // behind the harness's back
		t.Fatal(err)
	}
	if !j.wait(10 * time.Second) {
		t.Fatal("server not reaped")
	}
	err = c.Close()
	if err == nil || !strings.Contains(err.Error(), "had exited by itself") || !strings.Contains(err.Error(), "tail of") {
		t.Fatalf("Close = %v, want a crash report", err)
	}
}

func TestStartBindFailureWhileRunning(t *testing.T) {
	// A server that logs a bind failure but keeps running (as ZooKeeper
	// does while it retries its election port) is not waited for.
	before := ownTempDirs(t)
	count := filepath.Join(t.TempDir(), "count")
	inst := fakeJava(t, "echo run >> "+count+"\necho 'java.net.BindException: Address already in use'\nexec sleep 600\n")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	_, err := startInstall(ctx, inst, Config{Size: 3})
	if !errors.Is(err, errBind) {
		t.Fatalf("error %v, want one wrapping errBind", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %v to notice the bind failures", d)
	}
	b, err := os.ReadFile(count)
	if err != nil {
		t.Fatal(err)
	}
	// Each attempt starts three servers, but gives up (killing the
	// others) as soon as one reports a bind failure.
	if n := strings.Count(string(b), "run"); n < startAttempts || n > 3*startAttempts {
		t.Errorf("%d server runs, want %d attempts of up to 3", n, startAttempts)
	}
	checkNoNewDirs(t, before)
}

func TestFreePorts(t *testing.T) {
	ports, err := freePorts(30)
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := portRange()
	seen := make(map[int]bool)
	for _, p := range ports {
		if seen[p] {
			t.Errorf("port %d picked twice", p)
		}
		seen[p] = true
		if lo > 0 && (p < lo || p > hi) {
			t.Errorf("port %d outside [%d, %d]", p, lo, hi)
		}
	}
	if runtime.GOOS == "linux" && lo == 0 {
		t.Logf("no port range outside the ephemeral ports; using bind(:0)")
	}
}

func TestStartInDataDir(t *testing.T) {
	parent := t.TempDir()
	record := filepath.Join(t.TempDir(), "zoo.cfg")
	// The last argument is zoo.cfg: keep a copy, then never serve.
	inst := fakeJava(t, "for a; do last=$a; done\ncp \"$last\" "+record+"\nexec sleep 600\n")
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := startInstall(ctx, inst, Config{DataDir: parent}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want a deadline", err)
	}
	b, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	want := "dataDir=" + filepath.Join(parent, tempDirPrefix+strconv.Itoa(os.Getpid())+"-")
	if !strings.Contains(string(b), want) {
		t.Errorf("zoo.cfg does not contain %q:\n%s", want, b)
	}
	if left, _ := filepath.Glob(filepath.Join(parent, "*")); len(left) > 0 {
		t.Errorf("failed start left %v in DataDir", left)
	}
}

func TestStartInMissingDataDir(t *testing.T) {
	inst := fakeJava(t, "exit 1\n")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	missing := filepath.Join(t.TempDir(), "missing")
	if _, err := startInstall(ctx, inst, Config{DataDir: missing}); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("error %v, want one wrapping os.ErrNotExist", err)
	}
}

func TestServerJVMFlags(t *testing.T) {
	for _, tc := range []struct {
		name      string
		flags     string
		want      []string
		wantNever []string
	}{
		{name: "default", want: DefaultServerJVMFlags()},
		{name: "replaced", flags: "-Xmx1000m -XX:+UseG1GC", want: []string{"-Xmx1000m", "-XX:+UseG1GC"},
			wantNever: DefaultServerJVMFlags()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			record := filepath.Join(t.TempDir(), "args")
			inst := fakeJava(t, "echo \"$@\" > "+record+"\nexec sleep 600\n")
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			if _, err := startInstall(ctx, inst, Config{ServerJVMFlags: tc.flags}); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("error %v, want a deadline", err)
			}
			b, err := os.ReadFile(record)
			if err != nil {
				t.Fatal(err)
			}
			args := strings.Fields(string(b))
			for _, f := range tc.want {
				if !slices.Contains(args, f) {
					t.Errorf("JVM arguments %q lack %q", args, f)
				}
			}
			for _, f := range tc.wantNever {
				if slices.Contains(args, f) {
					t.Errorf("JVM arguments %q have %q", args, f)
				}
			}
		})
	}
}

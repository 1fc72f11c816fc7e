// Package examples_test checks that the programs under examples/ are ones a
// user can copy: each directory, copied into a module of the user's own,
// builds, vets and runs there, and says which servers it could not reach.
package examples_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zklock/zklock/internal/zktest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Each example, copied with its test into a module of the user's
// (example.com/<name>, outside this repository, its go.mod requiring
// zklock with a replace to this clone), builds and passes go vet: it
// imports no package of the repository's internal/ tree, which Go
// forbids outside it. The copy's go.mod requires what the example's own
// module requires, at the same versions, and its go.sum is the module's:
// nothing needs downloading that the repository's own build did not.
//
// The built command then finds its servers as documented: -zk first,
// ZK_SERVERS second, 127.0.0.1:2181 last; and where nothing answers it
// exits 1 at once, naming the address and what to do.
func TestExamplesBuildOutsideTheRepository(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every example in a module of its own")
	}
	repo, err := filepath.Abs("..")
	require.NoError(t, err)
	names := exampleDirs(t)
	require.NotEmpty(t, names)
	refused := zktest.ClosedAddr(t)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			assertImports(t, name)
			dir := copyExample(t, repo, name)
			bin := filepath.Join(t.TempDir(), name)
			goCmd(t, dir, "build", "-o", bin, ".")
			goCmd(t, dir, "vet", "./...")

			r := runExample(t, bin, nil, "-zk", refused)
			assertUnreachable(t, r, refused, "-zk")
			r = runExample(t, bin, []string{"ZK_SERVERS=" + refused})
			assertUnreachable(t, r, refused, "ZK_SERVERS")
			r = runExample(t, bin, []string{"ZK_SERVERS=127.0.0.1:1"}, "-zk", refused)
			assertUnreachable(t, r, refused, "-zk over ZK_SERVERS")
			r = runExample(t, bin, nil, "-h")
			assert.Contains(t, r.stderr, "127.0.0.1:2181", "-h: the default without ZK_SERVERS")
		})
	}
}

// allowed are the packages an example may import besides the standard
// library's: zklock's public ones, go-zookeeper, whose types zklock's API
// takes and returns, and, for the metrics example, Prometheus's.
var allowed = []string{"github.com/zklock/zklock", "github.com/zklock/zklock/", "github.com/go-zookeeper/zk"}

// assertImports checks that the example's commands import only the
// standard library and allowed packages, none of them internal.
func assertImports(t *testing.T, name string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(name, "*.go"))
	require.NoError(t, err)
	ok := slices.Clone(allowed)
	if name == "metrics" {
		ok = append(ok, "github.com/prometheus/")
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		require.NoError(t, err)
		for _, imp := range parsed.Imports {
			p, err := strconv.Unquote(imp.Path.Value)
			require.NoError(t, err)
			std := !strings.Contains(strings.Split(p, "/")[0], ".")
			public := slices.ContainsFunc(ok, func(a string) bool {
				return p == a || strings.HasSuffix(a, "/") && strings.HasPrefix(p, a)
			}) && !slices.Contains(strings.Split(p, "/"), "internal")
			assert.True(t, std || public, "%s imports %s", f, p)
		}
	}
}

// exampleDirs returns the directories under examples/ that hold a
// command.
func exampleDirs(t *testing.T) []string {
	entries, err := os.ReadDir(".")
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join(e.Name(), "main.go")); e.IsDir() && err == nil {
			names = append(names, e.Name())
		}
	}
	return names
}

// copyExample copies the Go files of examples/<name> into a new module
// example.com/<name> in a temporary directory, whose go.mod requires what
// the example's own module (its directory's or the repository's) requires,
// with its replaces made absolute, and a replace of zklock to repo. It
// returns the directory.
func copyExample(t *testing.T, repo, name string) string {
	dir := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.Mkdir(dir, 0o755))
	files, err := filepath.Glob(filepath.Join(name, "*.go"))
	require.NoError(t, err)
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, filepath.Base(f)), data, 0o644))
	}
	modDir := repo
	if _, err := os.Stat(filepath.Join(name, "go.mod")); err == nil {
		modDir, err = filepath.Abs(name)
		require.NoError(t, err)
	}
	mod := readGoMod(t, modDir)
	var gomod strings.Builder
	fmt.Fprintf(&gomod, "module example.com/%s\n\ngo %s\n\nrequire (\n", name, mod.Go)
	hasZklock := false
	for _, r := range mod.Require {
		hasZklock = hasZklock || r.Path == "github.com/zklock/zklock"
		fmt.Fprintf(&gomod, "\t%s %s\n", r.Path, r.Version)
	}
	if !hasZklock {
		gomod.WriteString("\tgithub.com/zklock/zklock v0.0.0\n")
	}
	gomod.WriteString(")\n\nreplace github.com/zklock/zklock => " + repo + "\n")
	for _, r := range mod.Replace {
		if r.Old.Path != "github.com/zklock/zklock" {
			target := r.New.Path
			if !filepath.IsAbs(target) {
				target = filepath.Join(modDir, target)
			}
			fmt.Fprintf(&gomod, "replace %s => %s\n", r.Old.Path, target)
		}
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod.String()), 0o644))
	sum, err := os.ReadFile(filepath.Join(modDir, "go.sum"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644))
	return dir
}

// goMod is what copyExample reads of a go.mod (go mod edit -json).
type goMod struct {
	Go      string
	Require []struct{ Path, Version string }
	Replace []struct{ Old, New struct{ Path string } }
}

func readGoMod(t *testing.T, dir string) goMod {
	var mod goMod
	out := goCmd(t, dir, "mod", "edit", "-json")
	require.NoError(t, json.Unmarshal([]byte(out), &mod))
	return mod
}

// goCmd runs the go command in dir, outside any workspace, with -mod=mod
// (the copy's go.mod may lack indirect requirements), and fails t if it
// fails. It returns the standard output.
func goCmd(t *testing.T, dir string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	flags := slices.DeleteFunc(strings.Fields(os.Getenv("GOFLAGS")), func(f string) bool { return strings.HasPrefix(f, "-mod=") })
	cmd.Env = append(cleanEnv("GOWORK", "GOFLAGS"), "GOWORK=off", "GOFLAGS="+strings.Join(append(flags, "-mod=mod"), " "))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "go %s in %s:\n%s", strings.Join(args, " "), dir, stderr.String())
	return stdout.String()
}

// cleanEnv returns the environment without the variables named.
func cleanEnv(names ...string) []string {
	return slices.DeleteFunc(os.Environ(), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return slices.Contains(names, name)
	})
}

// result is how a command ended.
type result struct {
	code           int
	stdout, stderr string
}

// runExample runs bin with args, ZK_SERVERS unset but for env, and
// returns how it ended. It fails t if bin runs for more than a minute.
func runExample(t *testing.T, bin string, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(cleanEnv("ZK_SERVERS"), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	require.NoError(t, ctx.Err(), "%s %v did not end", bin, args)
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		r.code = exit.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return r
}

// assertUnreachable checks that a command given addr (through how) said it
// could not reach ZooKeeper there, and what to do, and exited 1.
func assertUnreachable(t *testing.T, r result, addr, how string) {
	t.Helper()
	assert.Equal(t, 1, r.code, "%s: exit status; stderr:\n%s", how, r.stderr)
	assert.Contains(t, r.stderr, "cannot reach ZooKeeper at "+addr, how)
	assert.Contains(t, r.stderr, "zklock dev", "%s: says how to get a server", how)
}

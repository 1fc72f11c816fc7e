package zklockprom_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zklock/zklock"
	"github.com/zklock/zklock/zklockprom"
)

// readmeSnippet is the README's zklockprom snippet, which the library's
// module cannot compile (it must not import this one).
func readmeSnippet(servers []string) error {
	col := zklockprom.New(zklockprom.Options{})
	prometheus.MustRegister(col)
	client, err := zklock.Connect(servers, zklock.WithObserver(col.Observe))
	// (not in the README)
	if err == nil {
		client.Close()
	}
	return err
}

var _ = readmeSnippet

// The README's snippets that use zklockprom are readmeSnippet's body.
func TestREADMESnippet(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	src, err := os.ReadFile("readme_test.go")
	require.NoError(t, err)
	body := regexp.MustCompile(`(?s)func readmeSnippet\(servers \[\]string\) error \{\n(.*?)\t// \(not in the README\)`).FindSubmatch(src)
	require.NotNil(t, body)
	want := strings.ReplaceAll(string(body[1]), "\n\t", "\n")
	want = strings.TrimPrefix(want, "\t")
	found := 0
	for _, b := range regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(string(readme), -1) {
		if strings.Contains(b[1], "zklockprom.") {
			assert.Equal(t, want, b[1])
			found++
		}
	}
	assert.Equal(t, 1, found, "the README has one zklockprom snippet")
}

// A user's module at go 1.24, outside this repository, set up with the
// go mod edit commands of the README's Install section (the library's and
// each adapter's, against ../zklock, the clone), builds a program that
// imports the library and both adapters; go mod tidy leaves its go
// directive at 1.24: neither adapter asks for a newer Go. The clone is a
// link to this repository; the build goes through the usual module and
// build caches.
func TestREADMEInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module of its own")
	}
	t.Parallel()
	repo, err := filepath.Abs("..")
	require.NoError(t, err)
	dir := t.TempDir()
	app := filepath.Join(dir, "app")
	require.NoError(t, os.Mkdir(app, 0o755))
	require.NoError(t, os.Symlink(repo, filepath.Join(dir, "zklock")))
	require.NoError(t, os.WriteFile(filepath.Join(app, "go.mod"), []byte("module example.com/app\n\ngo 1.24\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(app, "main.go"), []byte(installMain), 0o644))

	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "GOFLAGS=") || strings.HasPrefix(kv, "GOWORK=")
	})
	env = append(env, "GOWORK=off", "GOFLAGS="+strings.Join(slices.DeleteFunc(strings.Fields(os.Getenv("GOFLAGS")),
		func(f string) bool { return strings.HasPrefix(f, "-mod=") }), " "))
	goCmd := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir, cmd.Env = app, env
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "go %s:\n%s", strings.Join(args, " "), out)
		return string(out)
	}
	edits := installEdits(t)
	for _, args := range edits {
		goCmd(args...)
	}
	goCmd("mod", "tidy")
	goCmd("build", "-o", os.DevNull, ".")

	var mod struct {
		Go      string
		Require []struct{ Path string }
		Replace []struct{ Old struct{ Path string } }
	}
	require.NoError(t, json.Unmarshal([]byte(goCmd("mod", "edit", "-json")), &mod))
	assert.Contains(t, []string{"1.24", "1.24.0"}, mod.Go, "the adapters need no Go newer than the library's")
	var replaced []string
	for _, r := range mod.Replace {
		replaced = append(replaced, r.Old.Path)
	}
	assert.ElementsMatch(t, []string{"github.com/zklock/zklock", "github.com/zklock/zklock/zklockprom", "github.com/zklock/zklock/zklockotel"}, replaced,
		"the Install section's commands replace the library and each adapter")
}

// installMain is the user's program: the library and both adapters.
const installMain = `package main

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/zklock/zklock"
	"github.com/zklock/zklock/zklockotel"
	"github.com/zklock/zklock/zklockprom"
)

func main() {
	col := zklockprom.New(zklockprom.Options{})
	prometheus.MustRegister(col)
	obs, err := zklockotel.New(zklockotel.Options{})
	if err != nil {
		panic(err)
	}
	client, err := zklock.Connect([]string{"127.0.0.1:2181"}, zklock.WithObserver(func(ev zklock.Event) {
		col.Observe(ev)
		obs.Observe(ev)
	}))
	if err != nil {
		panic(err)
	}
	client.Close()
}
`

// installEdits returns the arguments of each "go mod edit" command in the
// README's Install section (its indented command lines; a "#" starts a
// comment).
func installEdits(t *testing.T) [][]string {
	t.Helper()
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(readme), "\n## Install\n")
	require.True(t, ok, "the README has no Install section")
	section, _, _ = strings.Cut(section, "\n## ")
	var edits [][]string
	for _, line := range strings.Split(section, "\n") {
		cmd, _, _ := strings.Cut(strings.TrimPrefix(line, "    "), "#")
		if f := strings.Fields(cmd); strings.HasPrefix(line, "    go mod edit ") {
			edits = append(edits, f[1:])
		}
	}
	require.NotEmpty(t, edits, "the Install section has no go mod edit command")
	return edits
}

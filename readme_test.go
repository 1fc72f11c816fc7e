package zklock_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zklock/zklock"
	"github.com/zklock/zklock/zktest"
)

// The README's Go snippets compile as written: each ```go block of
// README.md, CONTRIBUTING.md and docs/*.md (but those of the zklockprom
// adapter, which its module's tests compile) is the body of one of the readme* functions below (up to the
// line "// (not in the README)", after which a function may use what the
// snippet declared), which the compiler checks with the rest of the
// tests. TestREADMESnippets fails if a block has no such function, or a
// function's body drifted from its block.

func TestREADMESnippets(t *testing.T) {
	t.Parallel()
	docs, err := filepath.Glob("docs/*.md")
	require.NoError(t, err)
	var blocks [][]string
	for _, name := range append([]string{"README.md", "CONTRIBUTING.md"}, docs...) {
		text, err := os.ReadFile(name)
		require.NoError(t, err)
		for _, b := range goBlock.FindAllStringSubmatch(string(text), -1) {
			if strings.Contains(b[1], "zklockprom.") {
				continue // the adapter's own tests compile it: this module cannot import it
			}
			blocks = append(blocks, b)
		}
	}
	require.NotEmpty(t, blocks)

	src, err := os.ReadFile("readme_test.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "readme_test.go", src, parser.ParseComments)
	require.NoError(t, err)
	bodies := map[string]string{}
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || !strings.HasPrefix(fn.Name.Name, "readme") {
			continue
		}
		body := string(src[fset.Position(fn.Body.Lbrace).Offset+2 : fset.Position(fn.Body.Rbrace).Offset])
		body, _, _ = strings.Cut(body, "\t// (not in the README)\n")
		bodies[dedent(body)] = fn.Name.Name
	}
	for _, b := range blocks {
		_, ok := bodies[b[1]]
		require.True(t, ok, "README snippet has no readme* function in readme_test.go with this body:\n%s", b[1])
	}
	require.Len(t, bodies, len(blocks), "every readme* function is a README snippet")
}

// goBlock matches a ```go block of a Markdown text; its group 1 is the
// code.
var goBlock = regexp.MustCompile("(?s)```go\n(.*?)```")

// The snippets are compiled, not run: they connect to servers of their
// own. Naming them here keeps them from reading as dead code.
var _ = []any{readmeQuickStart, readmeGuardedWrite, readmeDigestACL, readmeTLS, readmeTesting, readmeKazoo}

// dedent removes one leading tab from every line.
func dedent(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, "\t")
	}
	return strings.Join(lines, "\n")
}

func readmeQuickStart(ctx context.Context) error {
	client, err := zklock.Connect([]string{"127.0.0.1:2181"})
	if err != nil {
		return err
	}
	defer client.Close()

	m, err := zklock.NewMutex(client, "/locks/billing")
	if err != nil {
		return err
	}

	hold, err := m.Lock(ctx) // blocks until held, or until ctx is done
	if err != nil {
		return err
	}
	defer hold.Release() // releases this hold: there is no context to get wrong

	// Work under a context that ends when ctx does or when the lock is lost,
	// and write only while the hold stands (fencing).
	work, cancel := hold.Bind(ctx)
	defer cancel()
	_, err = hold.Multi(work, &zk.SetDataRequest{Path: "/billing/state", Data: []byte("done"), Version: -1})
	return err // wraps zklock.ErrLockLost if the hold was gone: nothing written
}

// The "Testing your code" snippet is a test body: it runs too.
func TestREADMETestingYourCode(t *testing.T) {
	t.Parallel()
	readmeTesting(t)
}

func readmeTesting(t *testing.T) {
	cluster := zktest.Shared(t) // one server for the package, closed by zktest.Main
	root := cluster.Root(t)     // "/zktest/<test name>", deleted after the test
	link := zktest.NewLink(t, cluster)
	c, err := zklock.Connect(cluster.Servers(),
		zklock.WithSessionTimeout(time.Second),
		zklock.WithDialer(link.Dial))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	m, err := zklock.NewMutex(c, root+"/job")
	if err != nil {
		t.Fatal(err)
	}
	hold, err := m.Lock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	link.Pause() // the connection goes silent: under StandardPolicy the hold is lost
	select {
	case <-hold.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the hold outlived its connection")
	}
	if !errors.Is(hold.Err(), zklock.ErrLockLost) {
		t.Fatal(hold.Err())
	}
	link.Resume()
}

// Issue 23's "done when": a module of a user's, outside this repository,
// whose go.mod has only a replace to it, tests with the README's "Testing
// your code" snippet and the TestMain its text names; go mod tidy and go
// test pass (against this binary's shared ZooKeeper, as ZK_SERVERS), and
// its go.mod then requires nothing but zklock and go-zookeeper: the kit
// adds no dependency to its users' builds. The module's build goes
// through the usual build cache; the first run compiles the library, in
// tens of seconds.
func TestREADMETestingYourCodeOutside(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module of its own and runs its tests")
	}
	repo, err := filepath.Abs(".")
	require.NoError(t, err)
	dir := t.TempDir()
	src := userAppTest(t, "TestUserAppHoldLost")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "userapp.go"), []byte("// Package userapp is a user's code on zklock.\npackage userapp\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "userapp_test.go"), src, 0o644))

	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "ZK_SERVERS=") || strings.HasPrefix(kv, "GOFLAGS=") || strings.HasPrefix(kv, "GOWORK=")
	})
	env = append(env, "ZK_SERVERS="+zktest.Shared(t).ConnectString(), "GOWORK=off", "GOFLAGS="+withoutModFlag(os.Getenv("GOFLAGS")))
	goCmd := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "go %s:\n%s\nuserapp_test.go:\n%s", strings.Join(args, " "), out, src)
		return string(out)
	}
	goCmd("mod", "init", "example.com/userapp")
	goCmd("mod", "edit", "-require=github.com/zklock/zklock@v0.0.0", "-replace=github.com/zklock/zklock="+repo)
	goCmd("mod", "tidy")
	out := goCmd("test", "-count=1", "-timeout=2m", "-v", "./...")
	assert.Contains(t, out, "--- PASS: TestUserAppHoldLost", "the test ran, and did not skip:\n%s", out)

	var mod struct{ Require []struct{ Path string } }
	require.NoError(t, json.Unmarshal([]byte(goCmd("mod", "edit", "-json")), &mod))
	var required []string
	for _, r := range mod.Require {
		required = append(required, r.Path)
	}
	assert.ElementsMatch(t, []string{"github.com/go-zookeeper/zk", "github.com/zklock/zklock"}, required,
		"a user's go.mod requires zklock and go-zookeeper, nothing more")
}

// userAppTest returns the test file of the user's module: the README's
// "Testing your code" snippet as the body of the test name, the TestMain
// the section's text names, and the imports the two use.
func userAppTest(t *testing.T, name string) []byte {
	t.Helper()
	section := mdSection(t, "README.md", "Testing your code")
	block := goBlock.FindStringSubmatch(section)
	require.NotNil(t, block, "the README's Testing your code has no go block")
	testMain := regexp.MustCompile("`(func TestMain\\(m \\*testing\\.M\\) \\{.*?\\})`").FindStringSubmatch(section)
	require.NotNil(t, testMain, "the README's Testing your code names no TestMain")
	code := testMain[1] + "\n\nfunc " + name + "(t *testing.T) {\n" + block[1] + "}\n"
	var imports strings.Builder
	for _, group := range [][]string{{"context", "errors", "fmt", "testing", "time"},
		{"github.com/go-zookeeper/zk", "github.com/zklock/zklock", "github.com/zklock/zklock/zktest"}} {
		imports.WriteString("\n")
		for _, pkg := range group {
			if regexp.MustCompile(`\b` + path.Base(pkg) + `\.`).MatchString(code) {
				fmt.Fprintf(&imports, "\t%q\n", pkg)
			}
		}
	}
	src, err := format.Source([]byte("package userapp\n\nimport (" + imports.String() + ")\n\n" + code))
	require.NoError(t, err, "the snippet in a test file:\n%s", code)
	return src
}

// mdSection returns the section of the Markdown file name under the
// heading "## " title, up to the next heading of its level. (Not named
// readme*: those are the snippets.)
func mdSection(t *testing.T, name, title string) string {
	t.Helper()
	text, err := os.ReadFile(name)
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(text), "\n## "+title+"\n")
	require.True(t, ok, "%s has no section %q", name, title)
	section, _, _ = strings.Cut(section, "\n## ")
	return section
}

// withoutModFlag returns the GOFLAGS flags but -mod (such as the
// -mod=vendor of a vendoring build): the user's module has no vendor
// directory.
func withoutModFlag(goflags string) string {
	flags := strings.Fields(goflags)
	return strings.Join(slices.DeleteFunc(flags, func(f string) bool { return strings.HasPrefix(f, "-mod=") }), " ")
}

func readmeGuardedWrite(ctx context.Context, hold *zklock.Hold, v []byte) error {
	_, err := hold.Multi(ctx, &zk.SetDataRequest{Path: "/data", Data: v, Version: -1})
	if errors.Is(err, zklock.ErrLockLost) {
		return err // the hold is gone: nothing was written
	}
	return err // nil, or the write's own error (such as zk.ErrNoNode for missing data)
}

func readmeDigestACL(servers []string) (*zklock.Client, error) {
	owner := zk.DigestACL(zk.PermAll, "billing", "s3cret") // digest of user:password
	client, err := zklock.Connect(servers,
		zklock.WithAuth("digest", []byte("billing:s3cret")),
		zklock.WithACL(func(path string) []zk.ACL { return owner }),
		zklock.WithNamespace("billing"))
	// (not in the README)
	return client, err
}

func readmeTLS(caPEM []byte) (*zklock.Client, error) {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)                               // the CA that signed the servers' certificates
	cert, err := tls.LoadX509KeyPair("client.crt", "client.key") // if ssl.clientAuth=need
	if err != nil {
		return nil, err
	}
	client, err := zklock.Connect([]string{"zk1.example.com:2281"},
		zklock.WithTLS(&tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}))
	// (not in the README)
	return client, err
}

// Every relative link of the README, CONTRIBUTING.md and docs/*.md leads
// to a file that exists, and its #anchor, if any, to a heading there.
func TestDocLinks(t *testing.T) {
	t.Parallel()
	docs, err := filepath.Glob("docs/*.md")
	require.NoError(t, err)
	require.NotEmpty(t, docs, "the README's sections moved to docs/")
	link := regexp.MustCompile(`\]\(([^)#\s]*)(#[^)\s]*)?\)`)
	for _, name := range append([]string{"README.md", "CONTRIBUTING.md"}, docs...) {
		text, err := os.ReadFile(name)
		require.NoError(t, err)
		for _, m := range link.FindAllStringSubmatch(string(text), -1) {
			target, anchor := m[1], strings.TrimPrefix(m[2], "#")
			if strings.Contains(target, "://") {
				continue
			}
			file := name
			if target != "" {
				file = filepath.Join(filepath.Dir(name), target)
			}
			body, err := os.ReadFile(file)
			if !assert.NoError(t, err, "%s links to %s", name, m[0]) || anchor == "" {
				continue
			}
			assert.Contains(t, anchors(string(body)), anchor, "%s links to %s: no such heading", name, m[0])
		}
	}
}

// anchors returns the GitHub anchors of a Markdown text's headings.
func anchors(text string) []string {
	var out []string
	inCode := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "```") {
			inCode = !inCode
		}
		if inCode || !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.ToLower(strings.TrimSpace(strings.TrimLeft(line, "#")))
		var b strings.Builder
		for _, r := range h {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		out = append(out, b.String())
	}
	return out
}

func readmeKazoo(c *zklock.Client) (*zklock.Mutex, error) {
	m, err := zklock.NewMutex(c, "/locks/report", zklock.WithLayout(zklock.LayoutKazoo),
		zklock.WithLockData([]byte("report-go-1")))
	// (not in the README)
	return m, err
}

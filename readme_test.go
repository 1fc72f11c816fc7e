package zklock_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"net"
	"os"
	"path/filepath"
	"regexp"
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
		for _, b := range regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(string(text), -1) {
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

// The snippets are compiled, not run: they connect to servers of their
// own. Naming them here keeps them from reading as dead code.
var _ = []any{readmeQuickStart, readmeGuardedWrite, readmeDigestACL, readmeTLS, readmeTesting}

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
		zklock.WithZKOptions(zk.WithDialer(link.Dial)))
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
	tlsConf := &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	dial := func(network, addr string, timeout time.Duration) (net.Conn, error) {
		// timeout is go-zk's fixed 1s connect timeout, which tls.Dialer would
		// spend on the TCP connect and the handshake together: give the
		// handshake more.
		d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: max(timeout, 5*time.Second)}, Config: tlsConf}
		return d.Dial(network, addr) // ServerName defaults to addr's host
	}
	client, err := zklock.Connect([]string{"zk1.example.com:2281"},
		zklock.WithZKOptions(zk.WithDialer(dial)))
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

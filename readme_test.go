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
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"
	"github.com/zklock/zklock"
	"github.com/zklock/zklock/zktest"
)

// The README's Go snippets compile as written: each ```go block of
// README.md is the body of one of the readme* functions below (up to the
// line "// (not in the README)", after which a function may use what the
// snippet declared), which the compiler checks with the rest of the
// tests. TestREADMESnippets fails if a block has no such function, or a
// function's body drifted from its block.

func TestREADMESnippets(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(string(readme), -1)
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

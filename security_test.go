package zklock_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zklock/zklock"
	"github.com/zklock/zklock/internal/zktest"
)

// Locks made with a digest ACL cannot be deleted, revoked, read,
// overwritten or queued on, nor can their container parents be changed,
// by a session without the credentials or with other ones: the raw
// operations fail with zk.ErrNoAuth, and the zklock API fails with an
// error wrapping zk.ErrNoAuth that names the path. The owner still works.
func TestIntegration_SecurityDigestACL(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.create(e.root) // world-open, above the lock
	secret := zk.DigestACL(zk.PermAll, "owner", "s3cret")
	var mu sync.Mutex
	var asked []string
	owner := e.client(zklock.WithAuth("digest", []byte("owner:s3cret")), zklock.WithACL(func(p string) []zk.ACL {
		mu.Lock()
		asked = append(asked, p)
		mu.Unlock()
		return secret
	}))
	base := e.root + "/sec/job"
	m := e.mutex(owner, "/sec/job")
	bg := context.Background()
	h, err := m.Acquire(bg)
	require.NoError(t, err)
	node := m.LockPath(h)

	mu.Lock()
	for _, p := range []string{e.root + "/sec", base, base + "/lock-"} {
		assert.Contains(t, asked, p, "the ACL provider is asked for every node, parents too")
	}
	mu.Unlock()
	for _, p := range []string{e.root + "/sec", base, node} {
		acl, _, err := e.admin.GetACL(p)
		require.NoError(t, err, p)
		require.Len(t, acl, 1, p)
		assert.Equal(t, "digest", acl[0].Scheme, p)
		assert.True(t, strings.HasPrefix(acl[0].ID, "owner:"), p)
	}

	other := zktest.ConnectT(t, e.servers, zk.WithLogger(quietLogger{}))
	require.NoError(t, other.AddAuth("digest", []byte("mallory:guess")))
	for name, conn := range map[string]*zk.Conn{"anonymous": zktest.ConnectT(t, e.servers, zk.WithLogger(quietLogger{})), "other credentials": other} {
		t.Run("raw/"+name, func(t *testing.T) { rawDenied(t, conn, base, node) })
	}
	for name, opts := range map[string][]zklock.Option{
		"anonymous":         nil,
		"other credentials": {zklock.WithAuth("digest", []byte("mallory:guess"))},
	} {
		t.Run("zklock/"+name, func(t *testing.T) { apiDenied(t, e, e.client(opts...), node) })
	}

	// The owner still works: its hold stands, it revokes, releases and
	// acquires again.
	assert.NoError(t, h.Err())
	require.NoError(t, zklock.Revoke(bg, owner, node))
	data, _, err := e.admin.Get(node)
	require.NoError(t, err)
	assert.Equal(t, "__REVOKE__", string(data))
	require.NoError(t, m.Release(h))
	require.NoError(t, m.Do(bg, func(context.Context) error { return nil }))
}

// rawDenied checks that conn can do nothing to the lock node or its
// container parent.
func rawDenied(t *testing.T, conn *zk.Conn, base, node string) {
	_, _, err := conn.Get(node)
	assert.ErrorIs(t, err, zk.ErrNoAuth, "read the owner's data")
	_, err = conn.Set(node, []byte("__REVOKE__"), -1)
	assert.ErrorIs(t, err, zk.ErrNoAuth, "revoke (write the node)")
	_, err = conn.Set(node, []byte("mine"), -1)
	assert.ErrorIs(t, err, zk.ErrNoAuth, "overwrite")
	assert.ErrorIs(t, conn.Delete(node, -1), zk.ErrNoAuth, "delete the lock node")
	_, _, err = conn.Children(base)
	assert.ErrorIs(t, err, zk.ErrNoAuth, "list the container")
	_, err = conn.Create(base+"/lock-0000000000", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	assert.ErrorIs(t, err, zk.ErrNoAuth, "create a child of the container")
	_, err = conn.Set(base, []byte("x"), -1)
	assert.ErrorIs(t, err, zk.ErrNoAuth, "write the container")
	assert.ErrorIs(t, conn.Delete(base, -1), zk.ErrNoAuth, "delete the container")
	_, err = conn.SetACL(node, zk.WorldACL(zk.PermAll), -1)
	assert.ErrorIs(t, err, zk.ErrNoAuth, "open the node's ACL")
}

// apiDenied checks that a Client without the owner's credentials gets
// zk.ErrNoAuth, naming the path, from Revoke, Participants and Acquire,
// and leaves no node behind.
func apiDenied(t *testing.T, e *env, c *zklock.Client, node string) {
	bg := context.Background()
	base := node[:strings.LastIndex(node, "/")]
	err := zklock.Revoke(bg, c, node)
	require.ErrorIs(t, err, zk.ErrNoAuth)
	assert.Contains(t, err.Error(), node)
	m, err := zklock.NewMutex(c, base)
	require.NoError(t, err)
	_, err = m.Participants(bg)
	require.ErrorIs(t, err, zk.ErrNoAuth)
	assert.Contains(t, err.Error(), base)
	_, err = m.Acquire(bg)
	require.ErrorIs(t, err, zk.ErrNoAuth)
	assert.Contains(t, err.Error(), base)
	s, err := zklock.NewSemaphore(c, base+"/sem", 1)
	require.NoError(t, err)
	_, err = s.Acquire(bg)
	require.ErrorIs(t, err, zk.ErrNoAuth)
	assert.Contains(t, err.Error(), base+"/sem")
	children, _, err := e.admin.Children(base)
	require.NoError(t, err)
	assert.Equal(t, []string{node[len(base)+1:]}, children, "only the owner's node")
}

// A namespace cannot be escaped: namespaces with relative or empty
// segments are refused, "" and "/" mean no namespace, a leading "/" is
// ignored, and lock paths with ".." are refused under a valid namespace.
// A raw listing shows nothing was created outside it.
func TestIntegration_SecurityNamespaceEscape(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ns := strings.TrimPrefix(e.root, "/") + "/ns"
	for _, bad := range []string{"..", "../x", "a/../../b", "a//b", "a\x00b", "a/./b", ns + "/..", ns + "/../../zklock-escape", "a/", "/.."} {
		_, err := zklock.Connect(e.servers, zklock.WithNamespace(bad))
		require.ErrorIs(t, err, zklock.ErrInvalidArgument, "namespace %q", bad)
		assert.Contains(t, err.Error(), "namespace")
	}
	for _, none := range []string{"", "/"} {
		root, _, _, err := zklock.NamespacePaths(none, "/a")
		require.NoError(t, err)
		assert.Empty(t, root, "namespace %q is no namespace", none)
	}
	bg := context.Background()
	for _, opt := range []string{ns, "/" + ns} { // a leading "/" is ignored
		c := e.client(zklock.WithNamespace(opt))
		for _, p := range []string{"/..", "/../zklock-escape", "/a/../../zklock-escape", "/./x", "//zklock-escape", "/a/..", "/"} {
			_, err := zklock.NewMutex(c, p)
			require.ErrorIs(t, err, zklock.ErrInvalidPath, "lock path %q", p)
			_, err = zklock.NewSemaphore(c, p, 2)
			require.ErrorIs(t, err, zklock.ErrInvalidPath, "semaphore path %q", p)
			_, err = zklock.NewReadWriteLock(c, p)
			require.ErrorIs(t, err, zklock.ErrInvalidPath, "read/write lock path %q", p)
			require.ErrorIs(t, zklock.Revoke(bg, c, p), zklock.ErrInvalidPath, "revoke %q", p)
		}
		require.NoError(t, e.mutex(c, "/ok").Do(bg, func(context.Context) error { return nil }))
	}
	children, _, err := e.admin.Children(e.root)
	require.NoError(t, err)
	assert.Equal(t, []string{"ns"}, children, "everything lives under the namespace")
	for _, p := range []string{"/zklock-escape", "/zklock-test/zklock-escape", e.root + "/zklock-escape"} {
		ok, _, err := e.admin.Exists(p)
		require.NoError(t, err)
		assert.False(t, ok, "%s created outside the namespace", p)
	}
	top, _, err := e.admin.Children("/")
	require.NoError(t, err)
	assert.False(t, slices.ContainsFunc(top, func(s string) bool { return strings.Contains(s, "escape") }), "root: %v", top)
}

// Over TLS, against a server that requires client certificates
// (ssl.clientAuth=need) on its secure port: zklock connects through the
// tls.Conn that zk.WithDialer returns, as the README shows, after a
// handshake that verified the server certificate; two such Clients
// exclude each other on a Mutex. A client without a certificate gets no
// session, and one whose roots lack the server's CA fails the handshake
// with an x509 error.
func TestIntegration_SecurityTLS(t *testing.T) {
	t.Parallel()
	pki, err := zktest.NewPKI("zklock test CA")
	require.NoError(t, err)
	cluster := zktest.StartT(t, zktest.Config{TLS: pki.TLSConfig("need")})
	sc, ok := cluster.(zktest.SecureCluster)
	require.True(t, ok, "a %s cluster started with TLS is not a SecureCluster", cluster.Backend())
	secure := sc.SecureServers()
	require.Len(t, secure, 1)
	e := setupOn(t, cluster.Servers()) // its admin uses the plaintext port

	tlsMutexExcludes(t, e, secure, pki)

	// No client certificate: the server refuses the handshake (ZooKeeper
	// 3.8 speaks TLS 1.2 by default, where the refusal ends the client's
	// handshake; under TLS 1.3 it would come after).
	noCert := newTLSDialer(&tls.Config{RootCAs: pki.Roots, MinVersion: tls.VersionTLS12})
	tlsNoSession(t, secure, noCert)
	var refused *net.OpError // how crypto/tls reports an alert the peer sent
	if assert.ErrorAs(t, noCert.firstErr(t), &refused) {
		assert.Equal(t, "remote error", refused.Op, "the server refuses a client without a certificate: %v", refused)
	}

	// Roots without our CA: the client refuses the server's certificate.
	other, err := zktest.NewPKI("other CA")
	require.NoError(t, err)
	untrusting := newTLSDialer(&tls.Config{
		RootCAs: other.Roots, Certificates: []tls.Certificate{pki.Client}, MinVersion: tls.VersionTLS12,
	})
	tlsNoSession(t, secure, untrusting)
	var unknown x509.UnknownAuthorityError
	assert.ErrorAs(t, untrusting.firstErr(t), &unknown)
}

// tlsMutexExcludes checks that two Clients connected over TLS with client
// certificates, through the README's dialer, exclude each other.
func tlsMutexExcludes(t *testing.T, e *env, secure []string, pki *zktest.PKI) {
	t.Helper()
	conf := &tls.Config{RootCAs: pki.Roots, Certificates: []tls.Certificate{pki.Client}, MinVersion: tls.VersionTLS12}
	d1, d2 := newTLSDialer(conf), newTLSDialer(conf)
	c1 := e.clientTo(secure, zklock.WithDialer(d1.dial))
	c2 := e.clientTo(secure, zklock.WithDialer(d2.dial))
	for _, d := range []*tlsDialer{d1, d2} {
		st := d.firstState(t)
		assert.True(t, st.HandshakeComplete)
		require.NotEmpty(t, st.PeerCertificates)
		assert.True(t, st.PeerCertificates[0].Equal(pki.Server), "the server presented another certificate")
		t.Logf("TLS handshake: %s, %s", tls.VersionName(st.Version), tls.CipherSuiteName(st.CipherSuite))
	}

	bg := context.Background()
	m1, m2 := e.mutex(c1, "/tls"), e.mutex(c2, "/tls")
	h, err := m1.Acquire(bg)
	require.NoError(t, err)
	_, err = m2.TryAcquire(bg)
	require.ErrorIs(t, err, zklock.ErrLocked)
	got := acquireAsync(bg, m2)
	waitParticipants(t, m1, 2)
	require.NoError(t, m1.Release(h))
	a := await(t, got, 10*time.Second)
	require.NoError(t, a.err)
	require.NoError(t, m2.Release(a.ctx))
}

// tlsNoSession checks that a Client dialing through d gets no session
// within a short connect timeout, and that no handshake succeeded.
func tlsNoSession(t *testing.T, secure []string, d *tlsDialer) {
	t.Helper()
	c, err := zklock.Connect(secure, zklock.WithConnectTimeout(3*time.Second),
		zklock.WithDialer(d.dial))
	if err == nil {
		c.Close()
	}
	require.ErrorIs(t, err, zk.ErrNoServer)
	assert.Empty(t, d.ok, "a TLS handshake succeeded")
}

// tlsDialer is the README's go-zk dialer (zk.WithDialer) that connects
// with TLS, reporting the first handshake that succeeded and the first
// that failed.
type tlsDialer struct {
	conf             *tls.Config
	okOnce, failOnce sync.Once
	ok               chan tls.ConnectionState // receives the first successful handshake's state
	fail             chan error               // receives the first failed handshake's error
}

func newTLSDialer(conf *tls.Config) *tlsDialer {
	return &tlsDialer{conf: conf, ok: make(chan tls.ConnectionState, 1), fail: make(chan error, 1)}
}

// dial is the README's dialer, recording the handshake.
func (d *tlsDialer) dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	td := &tls.Dialer{NetDialer: &net.Dialer{Timeout: max(timeout, 5*time.Second)}, Config: d.conf}
	conn, err := td.Dial(network, addr)
	if err != nil {
		d.failOnce.Do(func() { d.fail <- err })
		return nil, err
	}
	d.okOnce.Do(func() { d.ok <- conn.(*tls.Conn).ConnectionState() })
	return conn, nil
}

// firstState waits for the first successful handshake and returns its
// state.
func (d *tlsDialer) firstState(t *testing.T) tls.ConnectionState {
	t.Helper()
	return await(t, d.ok, 10*time.Second)
}

// firstErr waits for the first failed handshake and returns its error.
func (d *tlsDialer) firstErr(t *testing.T) error {
	t.Helper()
	return await(t, d.fail, 10*time.Second)
}

// WithTLS: Connect speaks TLS itself, with the given roots and client
// certificate; a server whose certificate the roots do not trust is
// refused at once (not at the connect timeout), naming the address and
// wrapping the x509 error.
func TestIntegration_SecurityWithTLS(t *testing.T) {
	t.Parallel()
	pki, err := zktest.NewPKI("zklock test CA")
	require.NoError(t, err)
	cluster := zktest.StartT(t, zktest.Config{TLS: pki.TLSConfig("need")})
	sc, ok := cluster.(zktest.SecureCluster)
	require.True(t, ok, "a %s cluster started with TLS is not a SecureCluster", cluster.Backend())
	secure := sc.SecureServers()
	e := setupOn(t, cluster.Servers())

	conf := &tls.Config{RootCAs: pki.Roots, Certificates: []tls.Certificate{pki.Client}, MinVersion: tls.VersionTLS12}
	c1 := e.clientTo(secure, zklock.WithTLS(conf))
	c2 := e.clientTo(secure, zklock.WithTLS(conf))
	bg := context.Background()
	m1, m2 := e.mutex(c1, "/tls"), e.mutex(c2, "/tls")
	h, err := m1.Acquire(bg)
	require.NoError(t, err)
	_, err = m2.TryAcquire(bg)
	require.ErrorIs(t, err, zklock.ErrLocked)
	require.NoError(t, m1.Release(h))

	other, err := zktest.NewPKI("other CA")
	require.NoError(t, err)
	start := time.Now()
	_, err = zklock.Connect(secure, zklock.WithConnectTimeout(20*time.Second), zklock.WithTLS(&tls.Config{
		RootCAs: other.Roots, Certificates: []tls.Certificate{pki.Client}, MinVersion: tls.VersionTLS12,
	}))
	require.ErrorIs(t, err, zk.ErrNoServer)
	var unknown x509.UnknownAuthorityError
	require.ErrorAs(t, err, &unknown)
	assert.Contains(t, err.Error(), secure[0])
	assert.Less(t, time.Since(start), 10*time.Second, "well before the connect timeout")

	_, err = zklock.Connect(secure, zklock.WithTLS(conf), zklock.WithZKOptions(zk.WithLogger(quietLogger{})))
	require.ErrorIs(t, err, zklock.ErrInvalidArgument, "WithTLS cannot apply to a go-zookeeper connection")
}

// WithTLS against ZooKeeper's plaintext port: the server reads the TLS
// client hello as a request of impossible length and closes the
// connection. Connect says at once that the address does not speak TLS
// (it waited out its connect timeout, saying only EOF), wrapping
// zk.ErrNoServer and naming the address.
func TestIntegration_SecurityWithTLSPlaintextPort(t *testing.T) {
	t.Parallel()
	e := setup(t)
	pki, err := zktest.NewPKI("zklock test CA")
	require.NoError(t, err)
	conf := &tls.Config{RootCAs: pki.Roots, Certificates: []tls.Certificate{pki.Client}, MinVersion: tls.VersionTLS12}
	start := time.Now()
	c, err := zklock.Connect(e.servers, zklock.WithConnectTimeout(20*time.Second), zklock.WithTLS(conf))
	if err == nil {
		c.Close()
	}
	require.ErrorIs(t, err, zk.ErrNoServer)
	assert.NotErrorIs(t, err, context.DeadlineExceeded)
	t.Log(err)
	assert.Contains(t, err.Error(), e.servers[0]+" does not speak TLS")
	assert.Less(t, time.Since(start), 10*time.Second, "well before the connect timeout")
}

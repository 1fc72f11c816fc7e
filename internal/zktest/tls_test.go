package zktest

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

func TestTLSConfigValidate(t *testing.T) {
	pki, err := NewPKI("validate CA")
	if err != nil {
		t.Fatal(err)
	}
	ecKey := []byte("-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n")
	for name, c := range map[string]*TLSConfig{
		"bad ClientAuth":  {KeyStorePEM: pki.ServerKeyStorePEM, ClientAuth: "always"},
		"empty key store": {TrustStorePEM: pki.CAPEM},
		"no private key":  {KeyStorePEM: pki.CAPEM},
		"SEC 1 key":       {KeyStorePEM: append(ecKey, pki.CAPEM...)},
	} {
		if err := (Config{TLS: c}).Validate(); err == nil {
			t.Errorf("%s: Validate = nil, want an error", name)
		}
	}
	for _, auth := range []string{"", "need", "want", "none"} {
		if err := (Config{TLS: pki.TLSConfig(auth)}).Validate(); err != nil {
			t.Errorf("ClientAuth %q: Validate: %v", auth, err)
		}
	}
}

func TestTLSZooCfg(t *testing.T) {
	stores := tlsStores{keyStore: "/d/keystore.pem", trustStore: "/d/truststore.pem"}
	got := tlsZooCfg(&TLSConfig{}, stores, "127.0.0.1", 2281)
	for _, line := range []string{
		"secureClientPort=2281",
		"secureClientPortAddress=127.0.0.1",
		"serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory",
		"ssl.keyStore.location=/d/keystore.pem",
		"ssl.keyStore.type=PEM",
		"ssl.trustStore.location=/d/truststore.pem",
		"ssl.trustStore.type=PEM",
		"ssl.clientAuth=need",
	} {
		if !strings.Contains(got, line+"\n") {
			t.Errorf("zoo.cfg lacks %q:\n%s", line, got)
		}
	}
	got = tlsZooCfg(&TLSConfig{ClientAuth: "none"}, tlsStores{keyStore: "/k"}, "10.0.0.1", 1)
	if strings.Contains(got, "ssl.trustStore") || !strings.Contains(got, "ssl.clientAuth=none\n") {
		t.Errorf("zoo.cfg without a trust store, ClientAuth none:\n%s", got)
	}
}

func TestTLSUnsupportedExternal(t *testing.T) {
	pki, err := NewPKI("external CA")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(serversEnv, "127.0.0.1:1")
	_, err = Start(context.Background(), Config{TLS: pki.TLSConfig("")})
	if !errors.Is(err, ErrUnsupported) {
		t.Fatalf("Start(TLS) with %s set = %v, want ErrUnsupported", serversEnv, err)
	}
}

// A TLS cluster comes from the process backend, even with a registered
// backend available. It serves sessions on its secure port to clients
// with a certificate its CA signed, refuses clients without one, and still
// serves plaintext clients on its client port. A cluster without TLS has
// no secure addresses.
func TestIntegration_TLS(t *testing.T) {
	if len(externalServers()) > 0 {
		t.Skip("ZK_SERVERS is set")
	}
	clearRegistry(t)
	fake := &fakeBackend{name: "fake"}
	RegisterBackend(fake)
	pki, err := NewPKI("zktest CA")
	if err != nil {
		t.Fatal(err)
	}
	c := StartT(t, Config{TLS: pki.TLSConfig("need")})
	sc, ok := c.(SecureCluster)
	if c.Backend() != "process" || fake.started != 0 || !ok || len(sc.SecureServers()) != 1 ||
		sc.SecureServers()[0] == c.Servers()[0] {
		t.Fatalf("backend %s (fake starts %d): SecureCluster %v, servers %v",
			c.Backend(), fake.started, ok, c.Servers())
	}
	secure := sc.SecureServers()
	conn := ConnectT(t, secure, zk.WithDialer(tlsDial(&tls.Config{
		RootCAs: pki.Roots, Certificates: []tls.Certificate{pki.Client}, MinVersion: tls.VersionTLS12,
	})))
	mustCreate(t, conn, "/over-tls", nil, 0)
	if _, _, err := ConnectT(t, c.Servers()).Get("/over-tls"); err != nil {
		t.Errorf("plaintext get: %v", err)
	}

	noCert := tlsDial(&tls.Config{RootCAs: pki.Roots, MinVersion: tls.VersionTLS12})
	if conn, err := noCert("tcp", secure[0], 5*time.Second); err == nil {
		conn.Close()
		t.Errorf("handshake without a client certificate succeeded")
	}

	if sc, ok := Shared(t).(SecureCluster); ok && sc.SecureServers() != nil {
		t.Errorf("SecureServers without TLS = %v, want nil", sc.SecureServers())
	}
}

// tlsDial returns a go-zk dialer that connects with TLS.
func tlsDial(conf *tls.Config) zk.Dialer {
	return func(network, addr string, timeout time.Duration) (net.Conn, error) {
		d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: timeout}, Config: conf}
		return d.Dial(network, addr)
	}
}

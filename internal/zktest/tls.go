package zktest

import (
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// TLSConfig asks the process backend for servers that also serve TLS
// clients, on a secure client port beside the plaintext one (which the
// harness itself keeps using). The servers then run ZooKeeper's Netty
// connection factory, with PEM key and trust stores (ZooKeeper 3.6+).
type TLSConfig struct {
	// KeyStorePEM is the servers' PEM key store (ssl.keyStore.type=PEM):
	// the private key, unencrypted and in PKCS#8 form ("PRIVATE KEY";
	// ZooKeeper's PEM reader does not parse "EC PRIVATE KEY" or "RSA
	// PRIVATE KEY"), and the certificate chain, leaf first. Every server
	// of the cluster gets the same one, so the certificate must name the
	// address clients dial: 127.0.0.1, or the servers' addresses of an
	// Isolatable cluster.
	KeyStorePEM []byte
	// TrustStorePEM holds the PEM certificates of the CAs whose client
	// certificates the servers accept (ssl.trustStore.type=PEM). Empty
	// means no ssl.trustStore setting: Java's default CAs.
	TrustStorePEM []byte
	// ClientAuth is ssl.clientAuth: "need" (a client without a
	// certificate the trust store accepts is refused), "want" or "none".
	// "" means "need", ZooKeeper's default.
	ClientAuth string
}

// SecureCluster is implemented by the process backend's clusters, which
// can serve TLS clients (see [Config.TLS]).
type SecureCluster interface {
	Cluster
	// SecureServers returns the TLS client addresses ("host:port"), one
	// per server, indexed like Servers; nil if the cluster was started
	// without Config.TLS. A started server accepts TLS connections on
	// its address by the time it serves on its plaintext one.
	SecureServers() []string
}

// PEM block types of TLSConfig.KeyStorePEM.
const (
	pemPrivateKey  = "PRIVATE KEY"
	pemCertificate = "CERTIFICATE"
)

// validate returns an error if t cannot configure a server.
func (t *TLSConfig) validate() error {
	switch t.ClientAuth {
	case "", "need", "want", "none":
	default:
		return fmt.Errorf("zktest: config: TLS ClientAuth %q is not need, want or none", t.ClientAuth)
	}
	types := map[string]bool{}
	for rest := t.KeyStorePEM; ; {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			break
		}
		types[block.Type] = true
	}
	if !types[pemPrivateKey] || !types[pemCertificate] {
		return fmt.Errorf("zktest: config: TLS KeyStorePEM needs a %q and a %q PEM block", pemPrivateKey, pemCertificate)
	}
	return nil
}

// clientAuth returns t's ssl.clientAuth value.
func (t *TLSConfig) clientAuth() string {
	if t.ClientAuth == "" {
		return "need"
	}
	return t.ClientAuth
}

// tlsStores is where a process cluster's PEM stores are written.
type tlsStores struct {
	keyStore, trustStore string // trustStore is "" without TrustStorePEM
}

// writeTLSStores writes t's stores into dir, readable by the owner only.
func writeTLSStores(t *TLSConfig, dir string) (tlsStores, error) {
	s := tlsStores{keyStore: filepath.Join(dir, "keystore.pem")}
	if err := os.WriteFile(s.keyStore, t.KeyStorePEM, 0o600); err != nil {
		return s, fmt.Errorf("zktest: write TLS key store: %w", err)
	}
	if len(t.TrustStorePEM) == 0 {
		return s, nil
	}
	s.trustStore = filepath.Join(dir, "truststore.pem")
	if err := os.WriteFile(s.trustStore, t.TrustStorePEM, 0o600); err != nil {
		return s, fmt.Errorf("zktest: write TLS trust store: %w", err)
	}
	return s, nil
}

// tlsZooCfg returns the zoo.cfg lines that make a server listen for TLS
// clients on host:port with t's settings and the stores in s.
func tlsZooCfg(t *TLSConfig, s tlsStores, host string, port int) string {
	var b strings.Builder
	kv := func(k string, v any) { fmt.Fprintf(&b, "%s=%v\n", k, v) }
	kv("secureClientPort", port)
	kv("secureClientPortAddress", host)
	kv("serverCnxnFactory", "org.apache.zookeeper.server.NettyServerCnxnFactory")
	kv("ssl.keyStore.location", s.keyStore)
	kv("ssl.keyStore.type", "PEM")
	if s.trustStore != "" {
		kv("ssl.trustStore.location", s.trustStore)
		kv("ssl.trustStore.type", "PEM")
	}
	kv("ssl.clientAuth", t.clientAuth())
	return b.String()
}

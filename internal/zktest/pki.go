package zktest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"time"
)

// pkiValidity is how long the certificates of a PKI are valid.
const pkiValidity = 24 * time.Hour

// PKI is TLS key material made at run time, for tests: a CA, and a server
// and a client certificate it signed (ECDSA P-256, valid for a day).
// Nothing is written to disk or checked in.
type PKI struct {
	// CAPEM is the CA certificate in PEM, for a server's trust store.
	CAPEM []byte
	// Roots holds only the CA, for clients' tls.Config.RootCAs.
	Roots *x509.CertPool
	// Server is the servers' certificate, for 127.0.0.1 and localhost.
	Server *x509.Certificate
	// ServerKeyStorePEM is Server's private key (PKCS#8) followed by its
	// chain (Server, then the CA), as TLSConfig.KeyStorePEM wants it.
	ServerKeyStorePEM []byte
	// Client is a client certificate with its key, for a client's
	// tls.Config.Certificates.
	Client tls.Certificate
}

// ca is a certificate authority that signs certificates.
type ca struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// NewPKI makes a new CA named name and the certificates it signs. Two
// PKIs never trust each other's certificates.
func NewPKI(name string) (*PKI, error) {
	auth, err := newCA(name)
	if err != nil {
		return nil, err
	}
	server, serverKey, err := auth.issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: name + " server"},
		DNSNames:    []string{"localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	if err != nil {
		return nil, err
	}
	client, clientKey, err := auth.issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: name + " client"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return nil, err
	}
	p8, err := x509.MarshalPKCS8PrivateKey(serverKey)
	if err != nil {
		return nil, fmt.Errorf("zktest: pki: marshal server key: %w", err)
	}
	keyStore := pem.EncodeToMemory(&pem.Block{Type: pemPrivateKey, Bytes: p8})
	keyStore = append(keyStore, certPEM(server)...)
	keyStore = append(keyStore, certPEM(auth.cert)...)
	roots := x509.NewCertPool()
	roots.AddCert(auth.cert)
	return &PKI{
		CAPEM:             certPEM(auth.cert),
		Roots:             roots,
		Server:            server,
		ServerKeyStorePEM: keyStore,
		Client:            tls.Certificate{Certificate: [][]byte{client.Raw}, PrivateKey: clientKey, Leaf: client},
	}, nil
}

// TLSConfig returns a Config.TLS for servers presenting p.Server and
// accepting client certificates signed by p's CA, with the given
// ssl.clientAuth ("" means "need").
func (p *PKI) TLSConfig(clientAuth string) *TLSConfig {
	return &TLSConfig{KeyStorePEM: p.ServerKeyStorePEM, TrustStorePEM: p.CAPEM, ClientAuth: clientAuth}
}

// newCA makes a self-signed CA.
func newCA(name string) (*ca, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("zktest: pki: CA key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(pkiValidity),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	cert, err := sign(tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	return &ca{cert: cert, key: key}, nil
}

// issue signs a certificate for a new key with tmpl's subject, names and
// extended key usages, valid as long as the CA.
func (a *ca) issue(tmpl *x509.Certificate) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("zktest: pki: key for %s: %w", tmpl.Subject.CommonName, err)
	}
	tmpl.NotBefore, tmpl.NotAfter = a.cert.NotBefore, a.cert.NotAfter
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	cert, err := sign(tmpl, a.cert, &key.PublicKey, a.key)
	if err != nil {
		return nil, nil, err
	}
	return cert, key, nil
}

// sign gives tmpl a random serial number and signs it with the parent's
// key.
func sign(tmpl, parent *x509.Certificate, pub *ecdsa.PublicKey, parentKey *ecdsa.PrivateKey) (*x509.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("zktest: pki: serial number: %w", err)
	}
	tmpl.SerialNumber = serial
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, parentKey)
	if err != nil {
		return nil, fmt.Errorf("zktest: pki: sign %s: %w", tmpl.Subject.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("zktest: pki: parse %s: %w", tmpl.Subject.CommonName, err)
	}
	return cert, nil
}

// certPEM encodes c in PEM.
func certPEM(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: pemCertificate, Bytes: c.Raw})
}

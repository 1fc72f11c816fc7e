package zksession_test

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zklock/zklock/internal/zksession"
	izk "github.com/zklock/zklock/internal/zktest"
	"github.com/zklock/zklock/internal/zkwire"
)

// dialTLS dials a session on addr over TLS with conf, within d.
func dialTLS(addr string, conf *tls.Config, d time.Duration) (*zksession.Session, error) {
	c, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return zksession.Dial(c, []string{addr}, zksession.Config{SessionTimeout: 4 * time.Second, TLS: conf})
}

// A session over TLS works like one in the clear. The certificate is
// checked against the host of the address dialed, unless the config
// names the server: then against that name. The config given is not
// changed.
func TestIntegration_TLS(t *testing.T) {
	pki, err := izk.NewPKI("zksession CA")
	if err != nil {
		t.Fatal(err)
	}
	sc, ok := izk.StartT(t, izk.Config{TLS: pki.TLSConfig("need")}).(izk.SecureCluster)
	if !ok || len(sc.SecureServers()) != 1 {
		t.Fatal("no TLS server")
	}
	secure := sc.SecureServers()[0]
	_, port, _ := net.SplitHostPort(secure)
	conf := &tls.Config{RootCAs: pki.Roots, Certificates: []tls.Certificate{pki.Client}, MinVersion: tls.VersionTLS12}
	for _, addr := range []string{secure, net.JoinHostPort("localhost", port)} {
		s, err := dialTLS(addr, conf, wait)
		if err != nil {
			t.Fatalf("Dial %s over TLS: %v", addr, err)
		}
		if _, err := s.Create(ctx(t), "/tls", []byte(addr), zksession.OpenACL, zkwire.ModeEphemeral); err != nil {
			t.Fatalf("Create over TLS to %s: %v", addr, err)
		}
		if data, _, err := s.GetData(ctx(t), "/tls"); err != nil || string(data) != addr {
			t.Fatalf("GetData over TLS to %s = %q, %v", addr, data, err)
		}
		s.Close()
	}
	if conf.ServerName != "" {
		t.Fatalf("Dial set the caller's ServerName to %q", conf.ServerName)
	}
	wrong := conf.Clone()
	wrong.ServerName = "wrong.example"
	s, err := dialTLS(secure, wrong, time.Second)
	var verr *tls.CertificateVerificationError
	if s != nil || !errors.As(err, &verr) {
		t.Fatalf("Dial with ServerName wrong.example = %v, %v; want a certificate verification error", s, err)
	}
}

// A server that accepts the connection and never answers the TLS
// handshake is given up on after the handshake's bound, and the next
// attempt is made.
func TestTLSHandshakeBounded(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var accepted atomic.Int32
	done := make(chan struct{})
	go func() {
		defer close(done)
		var open []net.Conn
		defer func() {
			for _, nc := range open {
				nc.Close()
			}
		}()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			open = append(open, nc) // held open, never answered
		}
	}()
	c, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	conf := &tls.Config{ServerName: "zk", MinVersion: tls.VersionTLS12}
	s, err := zksession.Dial(c, []string{ln.Addr().String()}, zksession.Config{SessionTimeout: 400 * time.Millisecond, TLS: conf})
	ln.Close()
	<-done
	if s != nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Dial to a server silent in TLS = %v, %v", s, err)
	}
	if n := accepted.Load(); n < 2 {
		t.Fatalf("%d connection in 2 s with a handshake bound of 400 ms", n)
	}
}

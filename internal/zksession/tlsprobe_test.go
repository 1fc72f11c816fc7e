package zksession_test

import (
	"context"
	"crypto/tls"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zklock/zklock/internal/zksession"
	izk "github.com/zklock/zklock/internal/zktest"
)

// A TLS port that closes one handshake at once (over its maxClientCnxns,
// restarting, a proxy between backends) and then accepts the probe's
// connection as the TLS server it is: the probe must not wait out the
// attempt's deadline there ("srvr" alone is 4 bytes, and a TLS server
// waits for a 5-byte record header; it did, 2 s), but fail at once, so
// that the next attempt begins.
func TestTLSProbeOnATLSPortEndsAtOnce(t *testing.T) {
	pki, err := izk.NewPKI("probe")
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int32
	addr := notZooKeeper(t, func(nc net.Conn) {
		if n.Add(1) == 1 { // closes the first handshake at once
			nc.Read(make([]byte, 512))
			return
		}
		nc.SetDeadline(time.Now().Add(5 * time.Second))
		tls.Server(nc, &tls.Config{Certificates: []tls.Certificate{pki.Client}}).Handshake() // a real TLS server
	})
	conf := &tls.Config{ServerName: "zk", MinVersion: tls.VersionTLS12}
	start := time.Now()
	var once sync.Once
	var first time.Duration
	var firstErr error
	c, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	s, err := zksession.Dial(c, []string{addr}, zksession.Config{SessionTimeout: 2 * time.Second, TLS: conf,
		OnDial: func(_ string, err error) { once.Do(func() { first, firstErr = time.Since(start), err }) }})
	if s != nil {
		s.Close()
	}
	t.Logf("first attempt reported after %v: %v; Dial: %v", first, firstErr, err)
	if first > 500*time.Millisecond {
		t.Fatalf("the attempt a TLS port closed took %v (the probe in the clear waited for the attempt's deadline)", first)
	}
}

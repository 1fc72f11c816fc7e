package zktest

import (
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"
)

// TestConnectTimeoutTConnectionBrokenAtOnce: a connection that breaks
// right after its session was granted leaves go-zk's loop dialing, never
// waiting on a connection; ConnectTimeoutT must still return at once (it
// waited connectWait, then failed the test, when it looked only for the
// wait).
func TestConnectTimeoutTConnectionBrokenAtOnce(t *testing.T) {
	c := StartT(t, Config{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	relayed := make(chan struct{})
	go func() {
		defer close(relayed)
		client, err := ln.Accept()
		ln.Close() // no second connection: the loop dials in vain
		if err != nil {
			return
		}
		defer client.Close()
		server, err := net.Dial("tcp", c.Servers()[0])
		if err != nil {
			return
		}
		defer server.Close()
		// The connect request, then its response: a session is granted,
		// and both connections close.
		if relayFrame(client, server) == nil {
			_ = relayFrame(server, client)
		}
	}()
	start := time.Now()
	ConnectTimeoutT(t, []string{ln.Addr().String()}, 4*time.Second)
	if took := time.Since(start); took > connectWait/2 {
		t.Fatalf("ConnectTimeoutT returned after %v", took)
	}
	<-relayed
}

// relayFrame copies one length-prefixed ZooKeeper frame from src to dst.
func relayFrame(src io.Reader, dst io.Writer) error {
	var n [4]byte
	if _, err := io.ReadFull(src, n[:]); err != nil {
		return err
	}
	body := make([]byte, binary.BigEndian.Uint32(n[:]))
	if _, err := io.ReadFull(src, body); err != nil {
		return err
	}
	_, err := dst.Write(append(n[:], body...))
	return err
}

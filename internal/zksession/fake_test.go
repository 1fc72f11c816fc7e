package zksession_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/zklock/zklock/internal/zksession"
	"github.com/zklock/zklock/internal/zkwire"
)

// A server that offers a read-only session is refused: Dial does not
// return a Session on it.
func TestDialRefusesReadOnly(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	served := make(chan struct{})
	go func() {
		defer close(served)
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			zkwire.ReadFrame(nc, nil, 0)
			resp := zkwire.ConnectResponse{TimeOut: 4000, SessionID: 1, Passwd: make([]byte, 16), ReadOnly: true}
			frame, _ := zkwire.AppendFrame(nil, 0, resp)
			nc.Write(frame)
			nc.Close()
		}
	}()
	c, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	addr, d := ln.Addr().String(), newDials()
	s, err := zksession.Dial(c, []string{addr}, zksession.Config{SessionTimeout: 4 * time.Second, OnDial: d.onDial})
	if s != nil || !errors.Is(err, zksession.ErrReadOnly) {
		t.Fatalf("Dial to a read-only server = %v, %v; want ErrReadOnly", s, err)
	}
	if err := d.first(addr); !errors.Is(err, zksession.ErrReadOnly) || !strings.HasPrefix(err.Error(), addr+": ") {
		t.Fatalf("OnDial heard %v for a read-only offer, want ErrReadOnly naming %s", err, addr)
	}
	ln.Close()
	<-served
}

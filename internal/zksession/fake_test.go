package zksession_test

import (
	"context"
	"errors"
	"net"
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
	s, err := zksession.Dial(c, []string{ln.Addr().String()}, zksession.Config{SessionTimeout: 4 * time.Second})
	if s != nil || !errors.Is(err, zksession.ErrReadOnly) {
		t.Fatalf("Dial to a read-only server = %v, %v; want ErrReadOnly", s, err)
	}
	ln.Close()
	<-served
}

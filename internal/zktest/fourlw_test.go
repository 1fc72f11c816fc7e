package zktest

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeFourLetter serves canned replies to four-letter words. If hold is
// true it keeps connections open after replying, as a starting ZooKeeper
// 3.8.0 sometimes does.
func fakeFourLetter(t *testing.T, replies map[string]string, hold bool) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				cmd := make([]byte, 4)
				if _, err := io.ReadFull(c, cmd); err != nil {
					c.Close()
					return
				}
				io.WriteString(c, replies[string(cmd)])
				if !hold {
					c.Close()
				}
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

const srvrReply = `Zookeeper version: 3.8.0-debian, built on 2024-12-29 17:54 UTC
Latency min/avg/max: 0/0.0/0
Received: 1
Sent: 0
Connections: 1
Outstanding: 0
Zxid: 0x100000000
Mode: %s
Node count: 5
`

func TestWaitServingAndMode(t *testing.T) {
	t.Parallel()
	for _, hold := range []bool{false, true} {
		addr := fakeFourLetter(t, map[string]string{
			"ruok": "imok",
			"srvr": strings.Replace(srvrReply, "%s", "follower", 1),
		}, hold)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		start := time.Now()
		if err := WaitServing(ctx, addr); err != nil {
			t.Fatalf("hold=%v: WaitServing: %v", hold, err)
		}
		if mode, err := Mode(ctx, addr); err != nil || mode != "follower" {
			t.Fatalf("hold=%v: Mode = %q, %v", hold, mode, err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("hold=%v: took %v; a reply must not wait for the close", hold, d)
		}
		cancel()
	}
}

func TestWaitServingNotServing(t *testing.T) {
	t.Parallel()
	addr := fakeFourLetter(t, map[string]string{
		"ruok": "imok",
		"srvr": "This ZooKeeper instance is not currently serving requests\n",
	}, true)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if err := WaitServing(ctx, addr); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitServing = %v, want a deadline error", err)
	}
	if _, err := Mode(context.Background(), addr); err == nil || !strings.Contains(err.Error(), "not serving") {
		t.Fatalf("Mode of a server without quorum = %v, want a 'not serving' error", err)
	}
}

func TestWaitServingAndStoppedDeadline(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := WaitStopped(ctx, addr); err == nil {
		t.Fatal("WaitStopped on a listening port: no error")
	}
	ln.Close()
	if err := WaitStopped(context.Background(), addr); err != nil {
		t.Fatalf("WaitStopped on a closed port: %v", err)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel2()
	if err := WaitServing(ctx2, addr); err == nil {
		t.Fatal("WaitServing on a closed port: no error")
	}
}

func TestSrvr(t *testing.T) {
	t.Parallel()
	addr := fakeFourLetter(t, map[string]string{
		"srvr": strings.Replace(srvrReply, "%s", "leader", 1),
	}, false)
	fields, err := Srvr(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{
		"Zookeeper version": "3.8.0-debian, built on 2024-12-29 17:54 UTC",
		"Received":          "1",
		"Sent":              "0",
		"Mode":              "leader",
		"Node count":        "5",
	} {
		if fields[k] != want {
			t.Errorf("%s = %q, want %q", k, fields[k], want)
		}
	}
	if reply, err := FourLetterWord(context.Background(), addr, "srvr"); err != nil || !strings.HasPrefix(reply, "Zookeeper version: ") {
		t.Errorf("FourLetterWord srvr = %q, %v", reply, err)
	}
	notServing := fakeFourLetter(t, map[string]string{
		"srvr": "This ZooKeeper instance is not currently serving requests\n",
	}, false)
	if _, err := Srvr(context.Background(), notServing); err == nil || !strings.Contains(err.Error(), "not serving") {
		t.Errorf("Srvr of a server not serving = %v, want a 'not serving' error", err)
	}
}

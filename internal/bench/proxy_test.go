package main

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklock/zklock/internal/zktest"
)

// frame returns a ZooKeeper frame holding body.
func frame(body []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	return append(b, body...)
}

// request returns the frame of a request with xid and op and a payload.
func request(xid, op int32, payload string) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(xid))
	b = binary.BigEndian.AppendUint32(b, uint32(op))
	return frame(append(b, payload...))
}

// echoServer accepts connections and copies what it reads into got.
func echoServer(t *testing.T) (addr string, got func() []byte) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var buf bytes.Buffer
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c)
		mu.Lock()
		buf.Write(b)
		mu.Unlock()
	}()
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return ln.Addr().String(), func() []byte {
		mu.Lock()
		defer mu.Unlock()
		return bytes.Clone(buf.Bytes())
	}
}

func TestCountingProxyCountsFrames(t *testing.T) {
	addr, got := echoServer(t)
	p, err := newCountingProxy(addr, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	var sent []byte
	sent = append(sent, frame([]byte("connect request: no header"))...)
	sent = append(sent, request(1, 1, "/a")...)     // create
	sent = append(sent, request(-2, opPing, "")...) // ping: not counted
	sent = append(sent, request(2, 12, "/")...)     // getChildren2
	sent = append(sent, request(3, 2, "/a")...)     // delete
	sent = append(sent, request(4, 2, "/b")...)     // delete
	// Written in two uneven pieces: frames cross reads.
	if _, err := c.Write(sent[:7]); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	if _, err := c.Write(sent[7:]); err != nil {
		t.Fatal(err)
	}
	c.Close()
	deadline := time.Now().Add(5 * time.Second)
	for !bytes.Equal(got(), sent) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if !bytes.Equal(got(), sent) {
		t.Fatalf("server got %q, want %q", got(), sent)
	}
	counts, connects := p.Snapshot()
	want := opCounts{1: 1, 12: 1, 2: 2}
	if connects != 1 || counts.total() != 4 || counts[1] != 1 || counts[12] != 1 || counts[2] != 2 {
		t.Errorf("counts %v, connects %d; want %v and 1", counts, connects, want)
	}
	if err := p.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

func TestCountingProxyRealServer(t *testing.T) {
	c := zktest.Shared(t)
	p, err := newCountingProxy(c.Servers()[0], 0)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	conn := zktest.ConnectT(t, []string{p.Addr()})
	before, _ := p.Snapshot()
	downBefore := p.Down()
	node := "/bench-proxy-test"
	if _, err := conn.Create(node, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := conn.Children("/"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := conn.Exists(node); err != nil {
		t.Fatal(err)
	}
	if err := conn.Delete(node, -1); err != nil {
		t.Fatal(err)
	}
	after, connects := p.Snapshot()
	d := after.minus(before)
	named := d.named()
	if connects != 1 || d.total() != 4 || named["create"] != 1 || named["getChildren2"] != 1 ||
		named["exists"] != 1 || named["delete"] != 1 {
		t.Errorf("counted %v (connects %d), want one each of create, getChildren2, exists, delete", named, connects)
	}
	// Every reply has a 20-byte frame and header (length, xid, zxid, err).
	if down := p.Down() - downBefore; down < 4*20 {
		t.Errorf("%d bytes down for 4 replies, want at least 80", down)
	}
}

// TestServerCPU checks that the server's CPU time is read and grows with
// the requests it serves, where the server is a local process on Linux.
func TestServerCPU(t *testing.T) {
	c := zktest.Shared(t)
	p, ok := c.(zktest.Process)
	if !ok || runtime.GOOS != "linux" {
		t.Skipf("the %s backend's server is not a local process we can read", c.Backend())
	}
	pid := p.PID(0)
	if pid == 0 {
		t.Fatal("PID(0) = 0 for a running server")
	}
	before, err := processCPU(pid)
	if err != nil {
		t.Fatal(err)
	}
	conn := zktest.ConnectT(t, c.Servers())
	for deadline := time.Now().Add(time.Minute); ; {
		for range 200 {
			if _, _, err := conn.Exists("/"); err != nil {
				t.Fatal(err)
			}
		}
		after, err := processCPU(pid)
		if err != nil {
			t.Fatal(err)
		}
		if after > before {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server's CPU time stayed at %v for a minute of requests", before)
		}
	}
}

func TestOpCounts(t *testing.T) {
	a := opCounts{1: 3, 2: 1}
	b := opCounts{1: 1, 8: 2}
	if got := a.plus(b); got[1] != 4 || got[2] != 1 || got[8] != 2 || got.total() != 7 {
		t.Errorf("plus = %v", got)
	}
	if got := a.minus(opCounts{1: 1}); got[1] != 2 || got[2] != 1 || got.total() != 3 {
		t.Errorf("minus = %v", got)
	}
	if opName(101) != "setWatches" || opName(999) != "op999" {
		t.Errorf("opName: %q %q", opName(101), opName(999))
	}
	row := newRTRow(libZK, "x", 2, rtDelta{counts: opCounts{1: 2, 12: 2, 2: 2, 999: 1}, down: 300})
	if row.Total != 3.5 || row.Groups["create"] != 1 || row.Groups["getChildren"] != 1 || row.Groups["other"] != 0.5 ||
		row.Down != 150 {
		t.Errorf("row = %+v", row)
	}
	a0 := snapshot{Counts: []opCounts{{1: 1}, {}}, Down: []int64{10, 0}}
	b0 := snapshot{Counts: []opCounts{{1: 3}, {2: 1}}, Down: []int64{110, 50}}
	if d := between(a0, b0); d.counts.total() != 3 || d.down != 150 {
		t.Errorf("between all = %+v", d)
	}
	if d := between(a0, b0, 1); d.counts.total() != 1 || d.down != 50 {
		t.Errorf("between one proxy = %+v", d)
	}
}

// TestDelayedProxyIsALatency checks that the proxy delays each message by
// its delay each way, and that messages sent back to back are not
// delayed one after the other: a latency, not a cap on throughput.
func TestDelayedProxyIsALatency(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { // echo
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = io.Copy(c, c)
	}()
	const delay = 5 * time.Millisecond
	p, err := newCountingProxy(ln.Addr().String(), delay)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const n = 50
	start := time.Now()
	var last time.Time
	for i := range n { // apart, but closer than the delay
		if _, err := c.Write(request(int32(i), 3, "/")); err != nil {
			t.Fatal(err)
		}
		last = time.Now()
		time.Sleep(100 * time.Microsecond) // about 1ms here
	}
	buf := make([]byte, len(request(0, 3, "/")))
	if _, err := io.ReadFull(c, buf); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 2*delay {
		t.Errorf("the first echo came after %v, less than the round trip %v", d, 2*delay)
	}
	rest := make([]byte, (n-1)*len(buf))
	if _, err := io.ReadFull(c, rest); err != nil {
		t.Fatal(err)
	}
	// Delays that added up would bring the last echo (n-1)*delay late.
	if d := time.Since(last); d > 2*delay+30*time.Millisecond {
		t.Errorf("the last echo came %v after the last write: the delays added up", d)
	}
	if counts, _ := p.Snapshot(); counts[3] != n-1 { // the first frame is the connect request
		t.Errorf("counted %v, want %d exists", counts, n-1)
	}
}

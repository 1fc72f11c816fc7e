package zktest

import (
	"context"
	"errors"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

func newLagLinkT(t *testing.T, target string) *lagLink {
	t.Helper()
	l, err := newLagLink(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.close(); err != nil {
			t.Error(err)
		}
	})
	return l
}

func TestViaPorts(t *testing.T) {
	ports := []int{11, 12, 13}
	got := viaPorts(ports, 1, func(j int) int { return 100 + j })
	if want := []int{100, 12, 102}; !slices.Equal(got, want) {
		t.Errorf("viaPorts = %v, want %v", got, want)
	}
	if want := []int{11, 12, 13}; !slices.Equal(ports, want) {
		t.Errorf("viaPorts changed its input: %v", ports)
	}
}

// A lagLink delivers in order, each chunk the delay after it was sent,
// without limiting throughput: many chunks sent at once all arrive about
// one delay later, not one delay each.
func TestLagLinkDelaysInOrder(t *testing.T) {
	echo := newEchoServer(t)
	l := newLagLinkT(t, echo.ln.Addr().String())
	c := dialT(t, "127.0.0.1:"+strconv.Itoa(l.port()))
	write(t, c, "warm")
	expectRead(t, c, "warm")

	const d, chunks = 150 * time.Millisecond, 50
	l.setDelay(d)
	start := time.Now()
	var want strings.Builder
	for i := range chunks {
		s := strconv.Itoa(i) + ","
		want.WriteString(s)
		write(t, c, s)
		time.Sleep(time.Millisecond) // separate chunks
	}
	expectRead(t, c, want.String())
	// The echo's way back is delayed too: a round trip takes 2d.
	if took := time.Since(start); took < 2*d || took > 2*d+chunks*time.Millisecond+2*time.Second {
		t.Errorf("%d chunks took %v to come back, want about %v", chunks, took, 2*d)
	}

	// A lower delay does not let later chunks overtake earlier ones.
	l.setDelay(300 * time.Millisecond)
	write(t, c, "slow,")
	l.setDelay(0)
	write(t, c, "fast")
	expectRead(t, c, "slow,fast")
}

func TestLagLinkClose(t *testing.T) {
	echo := newEchoServer(t)
	l, err := newLagLink(echo.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c := dialT(t, "127.0.0.1:"+strconv.Itoa(l.port()))
	write(t, c, "x")
	expectRead(t, c, "x")
	l.setDelay(time.Hour) // held chunks must not keep close waiting
	write(t, c, "held")
	if err := l.close(); err != nil {
		t.Fatal(err)
	}
	if err := l.close(); err != nil {
		t.Errorf("second close: %v", err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) && !isReset(err) {
		t.Errorf("read after close = %v, want EOF", err)
	}
	if _, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(l.port()), time.Second); err == nil {
		t.Errorf("dial after close succeeded")
	}
}

func TestLagLinkUnreachableTarget(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	target := ln.Addr().String()
	ln.Close()
	l := newLagLinkT(t, target)
	c := dialT(t, "127.0.0.1:"+strconv.Itoa(l.port()))
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) && !isReset(err) {
		t.Errorf("read = %v, want the connection closed", err)
	}
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && strings.Contains(op.Err.Error(), "reset")
}

func TestLaggableConfig(t *testing.T) {
	for _, c := range []Config{
		{Laggable: true},
		{Size: 3, Laggable: true, Isolatable: true},
		{Size: 3, SyncLimit: -1},
	} {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v.Validate() = nil, want an error", c)
		}
	}
	if err := (Config{Size: 3, Laggable: true, LocalSessions: true, SyncLimit: 40}).Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	t.Setenv(serversEnv, "127.0.0.1:1")
	for _, c := range []Config{{LocalSessions: true}, {SyncLimit: 10}, {Size: 3, Laggable: true}} {
		if _, err := Start(context.Background(), c); !errors.Is(err, ErrUnsupported) {
			t.Errorf("Start(%+v) with %s = %v, want ErrUnsupported", c, serversEnv, err)
		}
	}
}

// A follower whose link to the leader lags stays a follower, answers a new
// session at once, and serves reads from what it has applied: a write
// through another server reaches it only the lag later.
func TestIntegration_LaggableFollower(t *testing.T) {
	const lag = time.Second
	c := StartT(t, Config{Size: 3, Laggable: true, LocalSessions: true, SyncLimit: 20})
	lg, ok := c.(Lagger)
	if !ok {
		t.Fatalf("Laggable %s cluster %T is not a Lagger", c.Backend(), c)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	leader, err := Leader(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	f, g := (leader+1)%3, (leader+2)%3
	servers := c.Servers()
	onG := ConnectT(t, servers[g:g+1])
	mustCreate(t, onG, "/before", nil, 0)
	onF := ConnectT(t, servers[f:f+1])
	if _, err := onF.Sync("/before"); err != nil {
		t.Fatal(err)
	}

	if err := lg.Lag(f, lag); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	fresh := ConnectT(t, servers[f:f+1])
	if took := time.Since(start); took > lag/2 {
		t.Errorf("a new session on the lagging follower took %v, want it local and at once", took)
	}
	// The leader sends its commit to f before g answers the create, so the
	// lag is counted from before the request: f applies the write no sooner
	// than the lag after this instant.
	created := time.Now()
	mustCreate(t, onG, "/during", nil, 0)
	for _, conn := range []*zk.Conn{onF, fresh} {
		if ok, _, err := conn.Exists("/during"); err != nil || ok {
			t.Fatalf("the lagging follower shows /during at once: %v, %v", ok, err)
		}
		if ok, _, err := conn.Exists("/before"); err != nil || !ok {
			t.Fatalf("the lagging follower lost /before: %v, %v", ok, err)
		}
	}
	waitFor(t, 10*time.Second, "/during on the lagging follower", func(context.Context) error {
		if ok, _, err := onF.Exists("/during"); err != nil || !ok {
			return errors.Join(err, errors.New("not yet"))
		}
		return nil
	})
	if took := time.Since(created); took < lag {
		t.Errorf("the lagging follower showed /during after %v, want %v or more", took, lag)
	}
	if m, err := Mode(ctx, servers[f]); err != nil || m != "follower" {
		t.Errorf("lagging server mode %q, %v; want follower", m, err)
	}
	if err := lg.Lag(f, 0); err != nil {
		t.Fatal(err)
	}
	if err := lg.Lag(3, 0); err == nil {
		t.Errorf("Lag(3) of a 3-server cluster: no error")
	}
}

package zklock

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zklock/zklock/internal/zksession"
	"github.com/zklock/zklock/internal/zktest"
	kit "github.com/zklock/zklock/zktest"
)

// BenchmarkTransport measures what one request costs the client, on each
// transport, against the shared server on loopback: an exists of one
// node, from one goroutine (the round trip) and from 64 at once (requests
// pipelined). Besides ns/op it reports cpu-µs/op, this process's user and
// system CPU time per request (the server runs in its own JVM), and
// allocs. A cancellable context is passed on both: go-zookeeper's call
// then runs on a goroutine of its own (see await), as the engine's do.
//
//	go test -run XXX -bench Transport -benchtime 20000x .
func BenchmarkTransport(b *testing.B) {
	servers := kit.Shared(b).Servers()
	for _, tr := range []struct {
		name string
		open func(b *testing.B) (*Client, func())
	}{
		{"go-zookeeper", func(b *testing.B) (*Client, func()) {
			conn := zktest.ConnectT(b, servers)
			c := newClient(buildOptions(nil))
			c.adopt(conn, nil)
			return c, conn.Close
		}},
		{"zksession", func(b *testing.B) (*Client, func()) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			s, err := zksession.Dial(ctx, servers, zksession.Config{})
			if err != nil {
				b.Fatal(err)
			}
			c := newClient(buildOptions(nil))
			c.own = &ownSession{c: c}
			c.own.session.Store(s)
			c.zc = sessConn{c.own}
			return c, func() { s.Close() }
		}},
	} {
		for _, g := range []int{1, 64} {
			b.Run(fmt.Sprintf("%s/G=%d", tr.name, g), func(b *testing.B) {
				c, closeFn := tr.open(b)
				defer closeFn()
				defer registered(c, false)
				benchExists(b, c, g)
			})
		}
	}
}

// benchExists runs b.N exists of "/" on c from g goroutines.
func benchExists(b *testing.B, c *Client, g int) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	exists := func() {
		if _, err := await(c, ctx, func() (bool, error) {
			ok, _, err := c.zc.Exists(ctx, "/")
			return ok, err
		}, nil); err != nil {
			b.Error(err)
		}
	}
	exists() // warm
	var next sync.WaitGroup
	per := b.N / g
	b.ReportAllocs()
	cpu0 := cpuTime()
	b.ResetTimer()
	for range g {
		next.Add(1)
		go func() {
			defer next.Done()
			for range per {
				exists()
			}
		}()
	}
	next.Wait()
	b.StopTimer()
	if n := per * g; n > 0 {
		b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(n), "cpu-µs/op")
	}
}

// cpuTime is this process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

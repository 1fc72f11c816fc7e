package zklock

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklock/zklock/internal/zktest"
	kit "github.com/zklock/zklock/zktest"
)

// BenchmarkManyLocks measures what taking and releasing a lock costs the
// client on a Connect Client, as the bench tool's many-locks workload
// does: 64 goroutines take b.N distinct locks (their parents made
// beforehand), each its own, then release them all. It reports the
// process's CPU per lock (acquire and release; the server runs in its own
// JVM) and allocations, so that the client's share of the workload can be
// worked on without the whole tool.
//
//	go test -run XXX -bench ManyLocks -benchtime 5000x .
func BenchmarkManyLocks(b *testing.B) {
	servers := kit.Shared(b).Servers()
	admin := zktest.ConnectT(b, servers)
	defer admin.Close()
	root := fmt.Sprintf("/bench-many-%d", time.Now().UnixNano())
	paths := make([]string, b.N)
	if _, err := admin.Create(root, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		b.Fatal(err)
	}
	for i := range paths {
		paths[i] = fmt.Sprintf("%s/l-%d", root, i)
		if _, err := admin.Create(paths[i], nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			b.Fatal(err)
		}
	}
	var calls ioCalls
	c, err := Connect(servers, WithDialer(calls.dial))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	ms := make([]*Mutex, b.N)
	hs := make([]*Hold, b.N)
	for i, p := range paths {
		if ms[i], err = NewMutex(c, p); err != nil {
			b.Fatal(err)
		}
	}
	const g = 64
	spread := func(f func(i int) error) {
		var wg sync.WaitGroup
		for w := range g {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < len(ms); i += g {
					if err := f(i); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
	}
	ctx := context.Background()
	b.ReportAllocs()
	calls.reads.Store(0)
	calls.writes.Store(0)
	cpu0 := cpuTime()
	b.ResetTimer()
	spread(func(i int) (err error) { hs[i], err = ms[i].Lock(ctx); return err })
	spread(func(i int) error { return hs[i].Release() })
	b.StopTimer()
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
	b.ReportMetric(float64(calls.reads.Load())/float64(b.N), "reads/op")
	b.ReportMetric(float64(calls.writes.Load())/float64(b.N), "writes/op")
	for _, p := range paths {
		admin.Delete(p, -1)
	}
	admin.Delete(root, -1)
}

// ioCalls counts the reads and writes of the connections it dials: the
// system calls a request costs, as the kernel sees them.
type ioCalls struct{ reads, writes atomic.Int64 }

func (ic *ioCalls) dial(network, address string, timeout time.Duration) (net.Conn, error) {
	nc, err := net.DialTimeout(network, address, timeout)
	if err != nil {
		return nil, err
	}
	return &countedConn{nc, ic}, nil
}

// countedConn is a net.Conn whose reads and writes ic counts.
type countedConn struct {
	net.Conn
	ic *ioCalls
}

func (c *countedConn) Read(p []byte) (int, error) {
	c.ic.reads.Add(1)
	return c.Conn.Read(p)
}

func (c *countedConn) Write(p []byte) (int, error) {
	c.ic.writes.Add(1)
	return c.Conn.Write(p)
}

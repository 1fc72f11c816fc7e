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
// client, as the bench tool's many-locks workload does: 64 goroutines take
// b.N distinct locks (their parents made beforehand), each its own, then
// release them all, on a Connect Client (zklock) and with go-zookeeper's
// zk.Lock on a connection of its own (zk.Lock). It reports, for each
// phase, the process's CPU per lock (the server runs in its own JVM) and
// the reads and writes of the socket per lock, so that the client's share
// of the workload can be compared and worked on without the whole tool.
//
//	go test -run XXX -bench ManyLocks -benchtime 5000x .
func BenchmarkManyLocks(b *testing.B) {
	for _, lib := range []struct {
		name string
		open func(b *testing.B, servers []string, dial zk.Dialer, paths []string) manyLocks
	}{{"zklock", openManyZklock}, {"zk.Lock", openManyZK}} {
		b.Run(lib.name, func(b *testing.B) {
			servers := kit.Shared(b).Servers()
			paths := manyParents(b, servers)
			var calls ioCalls
			locks := lib.open(b, servers, calls.dial, paths)
			b.ReportAllocs()
			calls.reads.Store(0)
			calls.writes.Store(0)
			cpu0 := cpuTime()
			b.ResetTimer()
			spreadMany(b, len(paths), locks.lock)
			cpu1, reads, writes := cpuTime(), calls.reads.Load(), calls.writes.Load()
			spreadMany(b, len(paths), locks.unlock)
			b.StopTimer()
			n := float64(b.N)
			b.ReportMetric(float64((cpu1-cpu0).Microseconds())/n, "acq-cpu-µs/op")
			b.ReportMetric(float64(reads)/n, "acq-reads/op")
			b.ReportMetric(float64(writes)/n, "acq-writes/op")
			b.ReportMetric(float64((cpuTime()-cpu1).Microseconds())/n, "rel-cpu-µs/op")
			b.ReportMetric(float64(calls.reads.Load()-reads)/n, "rel-reads/op")
			b.ReportMetric(float64(calls.writes.Load()-writes)/n, "rel-writes/op")
		})
	}
}

// manyLocks takes and releases lock i of a many-locks run.
type manyLocks struct{ lock, unlock func(i int) error }

// manyParents creates b.N lock parents under a root of their own, removed
// when b ends, and returns their paths.
func manyParents(b *testing.B, servers []string) []string {
	admin := zktest.ConnectT(b, servers)
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
	b.Cleanup(func() {
		for _, p := range paths {
			admin.Delete(p, -1)
		}
		admin.Delete(root, -1)
	})
	return paths
}

// openManyZklock makes a Connect Client, through dial, and a Mutex per path.
func openManyZklock(b *testing.B, servers []string, dial zk.Dialer, paths []string) manyLocks {
	c, err := Connect(servers, WithDialer(Dialer(dial)))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	ms := make([]*Mutex, len(paths))
	hs := make([]*Hold, len(paths))
	for i, p := range paths {
		if ms[i], err = NewMutex(c, p); err != nil {
			b.Fatal(err)
		}
	}
	ctx := context.Background()
	return manyLocks{
		lock:   func(i int) (err error) { hs[i], err = ms[i].Lock(ctx); return err },
		unlock: func(i int) error { return hs[i].Release() },
	}
}

// openManyZK makes a go-zookeeper connection, through dial, and a zk.Lock
// per path.
func openManyZK(b *testing.B, servers []string, dial zk.Dialer, paths []string) manyLocks {
	conn := zktest.ConnectT(b, servers, zk.WithDialer(dial))
	ls := make([]*zk.Lock, len(paths))
	for i, p := range paths {
		ls[i] = zk.NewLock(conn, p, zk.WorldACL(zk.PermAll))
	}
	return manyLocks{
		lock:   func(i int) error { return ls[i].Lock() },
		unlock: func(i int) error { return ls[i].Unlock() },
	}
}

// spreadMany runs f(i) for i below n on 64 goroutines, each its share in
// turn, and returns when all are done; an error fails b.
func spreadMany(b *testing.B, n int, f func(i int) error) {
	const g = 64
	var wg sync.WaitGroup
	for w := range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += g {
				if err := f(i); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
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

package zklock

import (
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// packet builds a request packet as go-zookeeper writes it: length, xid,
// opcode, body.
func packet(xid int32, op int32, body ...byte) []byte {
	b := make([]byte, 12, 12+len(body))
	binary.BigEndian.PutUint32(b[0:4], uint32(8+len(body)))
	binary.BigEndian.PutUint32(b[4:8], uint32(xid))
	binary.BigEndian.PutUint32(b[8:12], uint32(op))
	return append(b, body...)
}

// connectPacket builds a connect request for session sid with a session
// timeout of timeout.
func connectPacket(sid int64, timeout time.Duration) []byte {
	b := make([]byte, 4+4+8+4+8+4+16)
	binary.BigEndian.PutUint32(b[0:4], uint32(len(b)-4))
	binary.BigEndian.PutUint32(b[16:20], uint32(timeout/time.Millisecond))
	binary.BigEndian.PutUint64(b[20:28], uint64(sid))
	binary.BigEndian.PutUint32(b[28:32], 16)
	return b
}

// pipeSocket returns a socket of s over one end of a pipe, and a channel
// of what reaches the other end, each write's bytes whole.
func pipeSocket(t *testing.T, s *sockets) (*socket, <-chan []byte) {
	t.Helper()
	near, far := net.Pipe()
	sk := &socket{Conn: near, s: s}
	s.open[sk] = struct{}{}
	got := make(chan []byte, 16)
	go func() {
		defer close(got)
		buf := make([]byte, 1<<16)
		for {
			n, err := far.Read(buf)
			if err != nil {
				return
			}
			got <- append([]byte(nil), buf[:n]...)
		}
	}()
	t.Cleanup(func() {
		sk.Close()
		far.Close()
		for range got {
		}
	})
	return sk, got
}

// read returns the next thing ch gives (the bytes the far end got, an
// outcome), or fails after d.
func read[T any](t *testing.T, ch <-chan T, d time.Duration) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(d):
		t.Fatalf("nothing within %v", d)
		var zero T
		return zero
	}
}

// none asserts that the far end gets nothing for d.
func none(t *testing.T, got <-chan []byte, d time.Duration) {
	t.Helper()
	select {
	case b := <-got:
		t.Fatalf("written while held: % x", b)
	case <-time.After(d):
	}
}

// greeted returns a socket of a Client whose guard watch is set in
// session 0x42, over a pipe, that has written its connect request for
// session sid with a session timeout of timeout; and what the far end
// gets after it.
func greeted(t *testing.T, sid int64, timeout time.Duration) (*socket, <-chan []byte) {
	t.Helper()
	s := &sockets{open: make(map[*socket]struct{})}
	s.guarded.Store(0x42)
	sk, got := pipeSocket(t, s)
	hello := connectPacket(sid, timeout)
	_, err := sk.Write(hello)
	require.NoError(t, err)
	require.Equal(t, hello, read(t, got, time.Second), "the connect request passes")
	return sk, got
}

// A connection that takes up the guarded session holds go-zookeeper's
// requests back until its set-watches request, then writes them in
// order; a set-auth request, which go-zookeeper sends and waits on before
// any other, passes while nothing is held, and waits behind what is.
func TestSocketHoldsUntilSetWatches(t *testing.T) {
	sk, got := greeted(t, 0x42, time.Hour) // no late release in this test
	auth := packet(1, opSetAuth, 'a')
	_, err := sk.Write(auth)
	require.NoError(t, err)
	assert.Equal(t, auth, read(t, got, time.Second), "set-auth passes")

	exists, ping, lateAuth := packet(2, 3, 'e'), packet(-2, 11), packet(3, opSetAuth, 'b')
	for _, b := range [][]byte{exists, ping, lateAuth} {
		n, err := sk.Write(b)
		require.NoError(t, err)
		require.Equal(t, len(b), n)
	}
	none(t, got, 50*time.Millisecond)

	sw := packet(4, opSetWatches, 's')
	_, err = sk.Write(sw)
	require.NoError(t, err)
	want := concat(exists, ping, lateAuth, sw)
	assert.Equal(t, want, readN(t, got, len(want)), "held packets first, in order")
	require.True(t, sk.open.Load())

	later := packet(5, 3, 'l')
	_, err = sk.Write(later)
	require.NoError(t, err)
	assert.Equal(t, later, read(t, got, time.Second), "an open socket writes at once")
}

// go-zookeeper's Close may queue its close request before its
// set-watches request: the close waits for it, and all goes in
// go-zookeeper's order, so that the close's answer cannot reach
// go-zookeeper while it reads its last zxid. Without a set-watches
// request, the close goes out after closeHeld, within the second
// go-zookeeper waits for its answer.
func TestSocketCloseRequestWaitsBriefly(t *testing.T) {
	sk, got := greeted(t, 0x42, time.Hour)
	exists, closing, sw := packet(1, 3, 'e'), packet(2, opClose), packet(3, opSetWatches, 's')
	for _, b := range [][]byte{exists, closing} {
		_, err := sk.Write(b)
		require.NoError(t, err)
	}
	none(t, got, 50*time.Millisecond)
	_, err := sk.Write(sw)
	require.NoError(t, err)
	want := concat(exists, closing, sw)
	assert.Equal(t, want, readN(t, got, len(want)))

	sk, got = greeted(t, 0x42, time.Hour)
	start := time.Now()
	for _, b := range [][]byte{exists, closing} {
		_, err := sk.Write(b)
		require.NoError(t, err)
	}
	want = concat(exists, closing)
	assert.Equal(t, want, readN(t, got, len(want)))
	assert.GreaterOrEqual(t, time.Since(start), closeHeld)
	assert.Less(t, time.Since(start), 900*time.Millisecond, "well within go-zookeeper's second")
}

// A connection for a new session (go-zookeeper has no watches to set
// again), or for a session without the guard watch, holds nothing.
func TestSocketOpenWithoutGuard(t *testing.T) {
	for _, sid := range []int64{0, 0x7} {
		sk, got := greeted(t, sid, time.Hour)
		b := packet(1, 3, 'e')
		_, err := sk.Write(b)
		require.NoError(t, err)
		assert.Equal(t, b, read(t, got, time.Second), "session %#x", sid)
	}
}

// If no set-watches request comes (the guard watch fired, and
// go-zookeeper had no other), the socket writes what it held a tenth of
// the session timeout after it held the first request, however long the
// handshake took.
func TestSocketReleasesLate(t *testing.T) {
	sk, got := greeted(t, 0x42, 2*time.Second)
	time.Sleep(300 * time.Millisecond) // a slow handshake: longer than the tenth
	b := packet(1, 3, 'e')
	start := time.Now()
	_, err := sk.Write(b)
	require.NoError(t, err)
	none(t, got, 100*time.Millisecond)
	assert.Equal(t, b, read(t, got, 2*time.Second))
	assert.GreaterOrEqual(t, time.Since(start), 200*time.Millisecond, "held for a tenth of the timeout")
}

// Close stops the late release.
func TestSocketCloseStopsLateRelease(t *testing.T) {
	sk, _ := greeted(t, 0x42, time.Second)
	_, err := sk.Write(packet(1, 3, 'e'))
	require.NoError(t, err)
	require.NoError(t, sk.Close())
	assert.False(t, sk.late.Stop(), "stopped by Close")
	_, err = sk.Read(make([]byte, 1))
	assert.ErrorIs(t, err, io.ErrClosedPipe)
}

// concat joins packets.
func concat(bs ...[]byte) []byte {
	var all []byte
	for _, b := range bs {
		all = append(all, b...)
	}
	return all
}

// readN reads n bytes from what the far end got, or fails after a second.
func readN(t *testing.T, got <-chan []byte, n int) []byte {
	t.Helper()
	var all []byte
	for len(all) < n {
		all = append(all, read(t, got, time.Second)...)
	}
	return all
}

// Read never waits on a release: over a pipe, whose far end answers
// before it reads on, a Read that waited for the release's write would
// deadlock with it.
func TestSocketReadDuringRelease(t *testing.T) {
	near, far := net.Pipe()
	defer far.Close()
	s := &sockets{open: make(map[*socket]struct{})}
	s.guarded.Store(0x42)
	sk := &socket{Conn: near, s: s}
	sk.answered.Store(true) // its far end answers "answer": the handshake's check is not under test
	defer sk.Close()

	hello := connectPacket(0x42, time.Hour)
	farDone := make(chan error, 1)
	go func() {
		buf := make([]byte, len(hello))
		if _, err := io.ReadFull(far, buf); err != nil {
			farDone <- err
			return
		}
		for _, part := range []string{"ans", "wer"} { // in two writes, before reading on
			if _, err := far.Write([]byte(part)); err != nil {
				farDone <- err
				return
			}
		}
		_, err := io.ReadFull(far, make([]byte, 2*len(packet(1, 3, 'e'))))
		farDone <- err
	}()
	_, err := sk.Write(hello)
	require.NoError(t, err)
	_, err = sk.Write(packet(1, 3, 'e'))
	require.NoError(t, err)

	answered := make(chan error, 1)
	go func() {
		_, err := io.ReadFull(sk, make([]byte, len("answer")))
		answered <- err
	}()
	wrote := make(chan error, 1)
	go func() { // a deadlocked release ends with the test's closes
		_, err := sk.Write(packet(2, opSetWatches, 'e'))
		wrote <- err
	}()
	require.NoError(t, read(t, answered, time.Second))
	require.NoError(t, read(t, wrote, time.Second))
	require.NoError(t, read(t, farDone, time.Second))
}

// The guard watch is recorded only if it did not fire while it was being
// set; a connection loss while setting it tries again at the next watch,
// and any other failure gives it up for the session.
func TestGuardBookkeeping(t *testing.T) {
	s := &sockets{open: make(map[*socket]struct{})}

	fired, ok := s.arm(1)
	require.True(t, ok)
	_, ok = s.arm(1)
	require.False(t, ok, "being set")
	s.event(zk.Event{Type: zk.EventNodeChildrenChanged, Path: guardPath})
	s.set(1, fired, true, false)
	assert.Zero(t, s.guarded.Load(), "it fired before it was recorded: gone")
	fired, ok = s.arm(1)
	require.True(t, ok, "set again at the next watch")
	s.set(1, fired, true, false)
	assert.EqualValues(t, 1, s.guarded.Load())
	_, ok = s.arm(1)
	assert.False(t, ok, "set")

	fired, ok = s.arm(2)
	require.True(t, ok)
	s.set(2, fired, false, true)
	fired, ok = s.arm(2)
	require.True(t, ok, "a connection loss: tried again")
	s.set(2, fired, false, false)
	_, ok = s.arm(2)
	assert.False(t, ok, "refused: given up for the session")
	assert.EqualValues(t, 1, s.guarded.Load())
}

// A create held back is made known as written when the release writes it,
// not before: the listing sent behind it must not overtake it.
func TestSocketHeldCreateWrittenAtRelease(t *testing.T) {
	sk, got := greeted(t, 0x42, time.Hour)
	written, forget := sk.s.written("/a")
	require.NotNil(t, written)
	defer forget()
	exists, create, sw := packet(1, 3, 'e'), packet(2, opCreate, 0, 0, 0, 2, '/', 'a'), packet(3, opSetWatches, 's')
	for _, b := range [][]byte{exists, create} {
		_, err := sk.Write(b)
		require.NoError(t, err)
	}
	select {
	case <-written:
		t.Fatal("made known as written while held")
	default:
	}
	_, err := sk.Write(sw)
	require.NoError(t, err)
	want := concat(exists, create, sw)
	assert.Equal(t, want, readN(t, got, len(want)))
	select {
	case <-written:
	default:
		t.Fatal("not made known as written by the release")
	}
}

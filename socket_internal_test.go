package zklock

import (
	"encoding/binary"
	"io"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// countingConn is a net.Conn that counts the reads made of it.
type countingConn struct {
	net.Conn
	reads int
}

func (c *countingConn) Read(p []byte) (int, error) {
	c.reads++
	return c.Conn.Read(p)
}

// Packets that arrive together are read, as go-zookeeper reads them
// (length, then body), in one read of the connection, not two each; and
// what the socket reads is what was sent.
func TestSocketReadsPacketsThatArriveTogetherAtOnce(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	const packets = 50
	var burst []byte
	for i := range packets {
		body := []byte{byte(i), 1, 2, 3, 4, 5, 6, 7}
		burst = binary.BigEndian.AppendUint32(burst, uint32(len(body)))
		burst = append(burst, body...)
	}
	sent := make(chan error, 1)
	go func() {
		conn, err := ln.Accept()
		if err == nil {
			_, err = conn.Write(burst) // one write: the packets arrive together
			defer conn.Close()
		}
		sent <- err
	}()
	s := &sockets{open: make(map[*socket]struct{})}
	nc, err := s.dial("tcp", ln.Addr().String(), 0)
	require.NoError(t, err)
	defer nc.Close()
	require.NoError(t, <-sent)
	sk := nc.(*socket)
	cc := &countingConn{Conn: sk.Conn}
	sk.Conn, sk.r = cc, newSocketReader(cc) // nothing was read yet
	var got []byte
	for range packets {
		var n [4]byte
		_, err := io.ReadFull(sk, n[:])
		require.NoError(t, err)
		body := make([]byte, binary.BigEndian.Uint32(n[:]))
		_, err = io.ReadFull(sk, body)
		require.NoError(t, err)
		got = append(append(got, n[:]...), body...)
	}
	assert.Equal(t, burst, got)
	assert.LessOrEqual(t, cc.reads, 2, "reads of the connection for %d packets that arrived together", packets)
}

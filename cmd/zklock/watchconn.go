package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/go-zookeeper/zk"
)

// watchConn opens a plain go-zookeeper connection to the servers, with the
// common flags' session timeout and credentials, for the watches that
// inspect -watch and revoke -wait set: a zklock Client made by Connect
// runs on zklock's own session and offers no watch, so the tool opens one
// more session for them, as any operator's tool would. It waits for the
// session up to -connect-timeout. The caller closes the connection. Its
// paths are full ZooKeeper paths (see common.full).
func (c *common) watchConn() (*zk.Conn, error) {
	servers := strings.Split(c.servers, ",")
	timeout := c.sessionTimeout
	if timeout <= 0 {
		timeout = defaultSessionTimeout
	}
	conn, events, err := zk.Connect(servers, timeout, zk.WithLogger(quietZK{}))
	if err != nil {
		return nil, opError("connect to", c.servers, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.connectTimeout)
	defer cancel()
	if err := awaitSession(ctx, events); err != nil {
		conn.Close()
		return nil, connectError(c.servers, c.connectTimeout, err)
	}
	if c.auth != "" {
		if err := conn.AddAuth("digest", []byte(c.auth)); err != nil {
			conn.Close()
			return nil, opError("authenticate to", c.servers, err)
		}
	}
	return conn, nil
}

// awaitSession waits for events to tell of a session, or for ctx to end:
// the error then wraps zk.ErrNoServer and ctx.Err(), as the library's own
// connect error does.
func awaitSession(ctx context.Context, events <-chan zk.Event) error {
	for {
		select {
		case ev, ok := <-events:
			switch {
			case !ok:
				return zk.ErrClosing
			case ev.State == zk.StateHasSession:
				return nil
			case ev.State == zk.StateAuthFailed:
				return zk.ErrAuthFailed
			}
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", zk.ErrNoServer, ctx.Err())
		}
	}
}

// quietZK silences go-zookeeper's log: the tool reports what fails itself.
type quietZK struct{}

// Printf discards the line.
func (quietZK) Printf(string, ...any) {}

package zklock

import "github.com/go-zookeeper/zk"

// transport is the part of a Client that reaches ZooKeeper: zklock's own
// session (Connect) or a go-zookeeper connection (NewClient, or Connect
// with WithZKOptions), seen by the engine through one interface, zc, and
// the session events they give. Its fields are written once, before the
// Client is returned, by Connect (connectOwn in connect.go, connectGo in
// client.go) and NewClient and adopt (client.go); they are read-only
// after, and need no lock.
type transport struct {
	conn     *zk.Conn        // go-zookeeper's connection (NewClient, or Connect with WithZKOptions)
	own      *ownSession     // zklock's own session (Connect)
	zc       zkConn          // the engine's view of conn or own; a seam for tests
	ownsConn bool            // Connect made conn, so Close closes it
	initErr  error           // invalid options of NewClient
	zkEvents <-chan zk.Event // conn's event channel; closed when conn's goroutines end
	queue    *eventQueue     // session events from the zk callback (Connect only)
	dials    *dialWatch      // the attempts to open the first session (Connect only)
}

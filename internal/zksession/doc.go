// Package zksession is zklock's own ZooKeeper session: one session over
// one TCP connection at a time, written from ZooKeeper's protocol and the
// Java client's documented behaviour (ClientCnxn), on the records and
// frames of package zkwire. It is meant to replace go-zookeeper under
// zklock's Connect.
//
// # Requests
//
// Every call takes a context. Requests are queued in call order; one
// writer goroutine per connection takes everything queued at once,
// assigns the xids as it writes (so wire order is xid order) and sends it
// in one write. One reader goroutine reads the replies, which ZooKeeper
// sends in request order, and matches each to the head of the FIFO of
// requests in flight: a reply whose xid is not the head's ends the
// connection. A call whose context ends returns at once with an error
// wrapping ctx.Err(), with no goroutine of its own: a request not yet
// written is not sent, and one in flight stays in the FIFO, its reply read
// and dropped, so the requests behind it are not disturbed.
//
// The last zxid the session has seen is taken only from replies matched
// to the FIFO, and only when positive: never from pings or notifications.
//
// # Connections
//
// Each connection attempt dials one server's address as given (so a
// name is resolved again at every attempt), then, with Config.TLS, runs
// a TLS client handshake (ServerName: the address's host unless the
// config names one), then ZooKeeper's handshake; one deadline bounds the
// three: T divided by the number of servers. Config.OnDial hears how each
// attempt ended, and why it failed, by address: a name that does not
// resolve, a refused dial, a server that does not speak TLS
// ([ErrNotTLS]: a plaintext port, found by a probe in the clear when the
// server closes the TLS handshake), a server that answers but not as
// ZooKeeper ([ErrNotZooKeeper]), that closes the connection or says
// nothing before its answer, a read-only offer.
//
// # Connection loss and reconnection
//
// When the connection breaks (an I/O error, a read timeout, an xid out of
// order, a reply that does not decode), every request queued or in flight fails exactly once
// with an error matching [ErrConnectionLoss], and the session reconnects
// to the next server (each server in turn, at once after the one before;
// after a round over them all without success, a pause of half of a limit
// doubling from 100 ms to 1 s, plus up to as much again at random, never
// past the expiry; Dial pauses alike), within the session: a ConnectRequest with the
// session's id, password and last zxid, and nothing else written before
// its ConnectResponse is read. Then, in this order on the wire: the auth
// packets again, SetWatches in batches of at most 128 KiB of paths with
// relativeZxid = the last zxid, and the requests queued during the cut.
//
// The session is expired, terminally, when a ConnectResponse says so
// (timeout <= 0), when it names another session, when the server sends an
// Expired session event, or when nothing has been read from any server for
// 4T/3 (the Java client's client-side expiry). Every request then fails
// with an error matching [ErrSessionExpired]; a new session is never
// opened in its place. Pings (xid -2, kept out of the FIFO) go when nothing
// has been sent for T/3.
//
// The read timeout is two thirds of the negotiated session timeout T, as
// the Java client's, but counted from when the session was last heard:
// when the newest request or ping that a server has answered was
// written, not when the last byte was read. A server that keeps sending
// (notifications, replies to requests written long ago) while it hears
// nothing from the client could otherwise expire the session, T after it
// last heard it, while the connection still looked alive; so the owner of
// the session learns of the doubt at least T/3 before the server may end
// it. The price: a server that takes longer than 2T/3 to answer a
// request or ping, or a reply that takes that long to arrive, costs the
// connection.
//
// # Watches
//
// GetDataW, ExistsW and GetChildren2W register a [Watch] only when the
// server set one: on CodeOK, or CodeOK and CodeNoNode for exists. A Watch
// is one-shot and its channel is buffered 1: the reader delivers the one
// event it will ever carry with a send that cannot block, so a slow
// consumer never holds up the reader, no goroutine sits between the wire
// and the consumer, and a notification is in its channel before the reply
// that follows it on the wire completes its call (wire order). Watches
// outlive connection losses (SetWatches sets them again); when the
// session ends, each remaining Watch gets an event of type EventNone with
// state StateExpired, StateAuthFailed or StateClosed. Session.RemoveWatch
// removes one, and tells the server (removeWatches) when it was the last
// of its path and type, in the same step as it queues the request: a
// request setting that watch again, queued later, goes on the wire
// after the removal. A [Tentative] collects the watches of calls made
// under its context, for a caller that may drop their results: its Drop
// removes them so, without waiting.
//
// AddWatch sets a persistent (or persistent recursive) watch, which
// Config.OnEvent alone hears; a reconnection sets it again with the
// one-shot ones in SetWatches2 (SetWatches while there is none, for
// servers before 3.6).
//
// # States
//
// Config.OnState hears the session's states (Connected, Disconnected,
// Expired, AuthFailed, Closed) in order, on one goroutine of the
// Session's, which Close waits for. Config.OnEvent hears the same states,
// in the same order, as Events of type EventNone, and every watch
// notification, synchronously on the reader goroutine: a notification
// before any Watch has it, and a connection's SyncConnected before
// anything read on it. The reader alone announces states, the end too
// (even when Close ended the session), which keeps the two in one order.
package zksession

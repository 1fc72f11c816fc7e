// Package zklock provides distributed lock recipes on ZooKeeper in the
// manner of Apache Curator: a re-entrant [Mutex], [ReadWriteLock], [Semaphore],
// [SemaphoreMutex], [MultiLock] and revocation ([Revoke]).
// The znode layout is Curator's, so a Go process and a Java Curator process
// exclude each other on the same path.
//
// # Ownership by context
//
// Go has no thread identity, so a hold belongs to a context.Context:
// Acquire returns the context that carries the hold. Pass it down the call
// chain. An Acquire with it re-enters the lock (a local count, no
// ZooKeeper work), a Release with it gives up one hold, and it is cancelled
// when the hold ends, with cause [ErrReleased] after the last Release or
// [ErrLockLost] when the hold is lost. Any context that carries no hold is
// a new participant and queues behind the current holders, first come,
// first served.
//
// # When a hold is lost
//
// ZooKeeper cannot promise that a holder still holds: a session can expire
// behind a partition. The [Client] tracks the session (Connected,
// Suspended, Reconnected, Lost, Closed), and its [ErrorPolicy] decides when
// a hold ends:
//
//   - [StandardPolicy] (default): as soon as the connection is suspended.
//   - [SessionPolicy]: when the session is lost, that is, reported expired,
//     or suspended for longer than the session timeout.
//
// Under both, a hold also ends when its node is deleted by someone else or
// the Client is closed. The library then deletes the node, if it still
// exists, so it never blocks the queue. To make writes safe even in the
// window before a loss is noticed, use the fencing token ([Mutex.Token], the
// node's creation zxid) or a guarded transaction ([Mutex.CheckOp]).
//
// # Nothing left behind
//
// A cancelled, timed-out or failed Acquire deletes its node before it
// returns (a create still in flight is deleted as soon as its reply
// arrives), or, if the connection is down, keeps deleting it in the
// background until it succeeds, the node is gone (its session ended), or
// the Client closes (which, for a Client made by Connect, ends the session
// and so deletes the node). Lock parents are
// CONTAINER nodes that ZooKeeper removes once they are empty.
//
// # Errors
//
// Errors wrap the package's sentinels ([ErrLocked], [ErrNotHeld],
// [ErrLockLost], [ErrClosed], [ErrInvalidPath], ...) and name the path they
// concern; test them with errors.Is.
package zklock

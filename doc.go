// Package zklock provides distributed lock recipes on ZooKeeper in the
// manner of Apache Curator: a re-entrant [Mutex], [ReadWriteLock], [Semaphore],
// [SemaphoreMutex], [MultiLock] and revocation ([Revoke]), and leader
// election ([Election], [Selector]).
// The znode layout is Curator's, so a Go process and a Java Curator process
// exclude each other on the same path; with [WithLayout](LayoutKazoo) it is
// kazoo's, and a Go process and a Python kazoo process do.
//
// # Recipes
//
//	zklock                          Curator
//	Mutex                           InterProcessMutex
//	ReadWriteLock                   InterProcessReadWriteLock
//	Semaphore, Lease                InterProcessSemaphoreV2, Lease
//	SemaphoreMutex                  InterProcessSemaphoreMutex
//	MultiLock, NewMultiLockPaths    InterProcessMultiLock
//	Mutex.MakeRevocable, Revoke     Revocable.makeRevocable, Revoker.attemptRevoke
//	Driver, StandardDriver          LockInternalsDriver, StandardLockInternalsDriver
//	Client.Listen, ErrorPolicy      ConnectionStateListener, ConnectionStateErrorPolicy
//	Election                        LeaderLatch
//	Selector                        LeaderSelector
//
// # Holds, and ownership by context
//
// Every recipe hands out a [Hold]: [Mutex.Lock] and [Mutex.TryLock] (both
// sides of a [ReadWriteLock] too), [SemaphoreMutex.Lock], [MultiLock.Lock],
// and for a [Semaphore] each [Lease] is one ([Lease.Hold]). Release it with
// [Hold.Release], which cannot pick the wrong context; each Hold owes one
// Release. [Hold.Context] carries the hold and is cancelled when it ends,
// with cause [ErrReleased] after the last Release or [ErrLockLost] when the
// hold is lost; [Hold.Bind] gives the context to work under, which also
// ends with the caller's; [Hold.Token] and [Hold.Multi] fence writes.
//
// Go has no thread identity, so a hold belongs to a context.Context, as
// Curator's belongs to a thread. Pass Hold.Context down the call chain: a
// Lock or Acquire with it re-enters the lock (a local count, no ZooKeeper
// work), through any Mutex of the same Client and path. Any context that
// carries no hold is a new participant and queues behind the current
// holders, first come, first served. The hold's context keeps the values
// of the context given to acquire, not its deadline: a timeout bounds the
// wait, not the hold. Acquire and Release by context remain, in Curator's
// style: Acquire returns the hold's context, which Release must be given.
// A [SemaphoreMutex] may be released with any context. A context that
// merges others ([Hold.Bind], a [MultiLock]'s) carries all their holds.
//
// TryLock and TryAcquire never wait, not even for the connection: while
// the Client is not connected they fail at once with [ErrNotConnected],
// and a connection lost during the call ends it as soon as the Client
// sees the loss. [NewSyncLocker]'s Unlock releases an ended hold first,
// else the oldest.
//
// A blocking acquire (Lock, Acquire, AcquireN, Campaign, a Selector's
// wait) waits for the connection as it waits for the lock, for as long as
// its context allows, as etcd's concurrency package does: started while
// the server is down, it goes on once the connection is back. The
// context bounds that wait, not the retry policy (see [WithRetryPolicy]):
// to fail fast while disconnected, as a Curator user may expect, give the
// acquire a deadline, or use a Try. An acquire whose context ends while
// the Client is not connected says so: its error wraps ctx.Err() and
// [ErrNotConnected] and says for how long ("context deadline exceeded;
// not connected for 4.2s (connection suspended)"), where a busy lock's
// timeout names the holder ([HolderError]). The first acquire to wait in
// an outage logs it at Info ("zklock: not connected: acquires wait for
// the connection"), once per outage however many wait.
//
// # Leader election
//
// An [Election] is Curator's LeaderLatch on the same engine as the locks:
// [Election.Campaign] waits until the participant leads and returns the
// leadership as a [Hold], which ends as a lock hold ends (Release resigns;
// a suspension under StandardPolicy, the session's loss, the node's
// deletion or Close lose it, with a cause wrapping [ErrLockLost]), and
// whose Token and Multi fence the leader's writes. [Election.Leader],
// [Election.Participants] and [Election.Observe] read the election;
// with no participant, Leader returns [ErrNoLeader] and Observe reports a
// [Leader] with no Node. Campaign grants leadership only to a node that
// belongs to the Client's current session (CURATOR-696); a waiting
// participant whose node vanishes, even with the whole path
// (CURATOR-724), creates it again.
//
// A [Selector] is Curator's LeaderSelector, which is an InterProcessMutex
// on the election's path: [Selector.Lead] runs a function for one term
// of leadership, and [Selector.Run] runs terms until its context ends,
// queueing again after each, also after a lost leadership (Curator's
// autoRequeue, without the requeue state that CURATOR-518 lost) and after
// a function that returned an error, which it logs and follows with a
// back-off (Curator's "The leader threw an exception").
//
// # Connecting
//
// [Connect] takes "host:port" addresses, or Curator's connect string
// ("zk1:2181,zk2:2181"; a chroot suffix is refused, use [WithNamespace], and
// so is a URL scheme such as "zk://").
// It waits for a session up to the connect timeout, but not in vain: when
// every server refuses the connection, answers but not as ZooKeeper (an
// HTTP server, say), or does not resolve, it fails at once with an error
// that names each address and why; when the timeout passes, the error
// says what each address last did (such as accepting the connection and
// never answering). [Client.Ping] is a health check in one call: nil
// while the Client has a session and the server answers.
//
// A Client made by Connect runs on zklock's own ZooKeeper session, written
// from ZooKeeper's protocol: every request takes its caller's context and
// returns when it ends, with no goroutine per request; a reconnect sets
// the session's watches again before any request queued meanwhile is sent
// (the Java client's order); after an expiry the Client opens a new session
// and says so (Lost, then Reconnected). [WithDialer] and [WithTLS] say how
// it reaches the servers. Its reads and writes of nodes of your own go
// through the Client: [Client.Get], [Client.Exists], [Client.Children],
// [Client.Create], [Client.Set], [Client.Delete] and [Hold.Multi]; its
// [Client.Conn] is nil. [NewClient] instead wraps a go-zookeeper
// connection the caller made, which then carries the recipes, and which
// Conn returns.
//
// # Paths
//
// One rule: every path given to zklock or returned by it is relative to
// the Client's namespace ([WithNamespace]): the paths of recipes, of
// [Client.EnsurePath] and of the ops of [Hold.Multi]; [Hold.Path],
// [Lease.Path], Participants, a [HolderError]'s Path and Node, and the
// Client's data operations ([Client.Get]...). What zklock hands over for
// go-zookeeper's own calls is the exception, since go-zookeeper knows no
// namespace: [Client.Conn] is the raw connection (of a NewClient Client),
// and the checks that [Hold.CheckOp], [Mutex.CheckOp] and [Lease.CheckOp]
// return carry the node's full path, to go into Conn().Multi (Hold.Multi
// takes them as they are, too). [Client.EnsurePath] creates the parents
// of the nodes a holder writes.
//
// # Error policies: when a hold is lost
//
// ZooKeeper cannot promise that a holder still holds: a session can expire
// behind a partition. The [Client] tracks the session (Connected,
// Suspended, Reconnected, Lost, Closed; [Client.Listen] reports every
// change), and its [ErrorPolicy], set with [WithErrorPolicy], decides when
// a hold ends:
//
//   - [StandardPolicy] (default): as soon as the connection is suspended,
//     because from then on the holder cannot know that it still holds.
//   - [SessionPolicy]: when the session is lost, that is, reported expired,
//     or suspended for longer than the Client trusts a suspended session:
//     a third of the session timeout less a tenth (about 7s of a 30s
//     session), because the servers may expire the session soon after.
//     It rides out shorter disconnects; guard writes with fencing under
//     it.
//
// Under both, a hold also ends when its node is deleted by someone else or
// the Client is closed. The library then deletes the node, if it still
// exists, so it never blocks the queue.
//
// # Signals of a lost hold
//
// A lost hold is reported in every way a caller may be looking:
//
//   - the hold's context is cancelled, and context.Cause returns an error
//     wrapping [ErrLockLost] (for a [Lease], [Lease.Done] is closed);
//   - Release, [Mutex.Token] and [Mutex.CheckOp] with the hold's context
//     return an error wrapping ErrLockLost, and Release clears the hold;
//   - the observer set with [WithObserver] receives an [EventLost], and
//     the logger set with [WithLogger] a Warn record "zklock: hold lost"
//     with the path, node and cause; holds lost together to a connection
//     change (a suspension under StandardPolicy, a lost session) are
//     summed up in one Warn record per cause ("zklock: holds lost", with
//     how many), and those Close ends in one record of its own, each
//     hold's loss then logged at Debug.
//
// # Fencing
//
// Between the real loss of a hold and its notice, another process may
// already hold the lock. Make writes safe in that window in one of two
// ways. [Mutex.Token] (and [Lease.Token]) returns a fencing token, the
// creation zxid of the hold's node, which strictly increases from one
// holder of a path to the next, across sessions and across the lock's
// parent being reaped and created again: pass it to storage that refuses
// tokens older than the newest it has seen. [Mutex.CheckOp] (and
// [Lease.CheckOp]) returns a check on the hold's node, to put first in a
// ZooKeeper transaction, which then commits only while the hold exists;
// [Hold.Multi] runs such a transaction on the Client's own session:
//
//	_, err = hold.Multi(ctx, &zk.SetDataRequest{Path: "/data", Data: v, Version: -1})
//	// fails with an error wrapping ErrLockLost once the hold's node is gone
//
// # Nothing left behind
//
// A cancelled, timed-out or failed Acquire deletes its node before it
// returns (a create still in flight is deleted as soon as its reply
// arrives), or, if the connection is down, keeps deleting it in the
// background until it succeeds or the node is gone (its session ended).
// Closing a Client made by Connect ends the session and so deletes the
// node; closing a Client made by NewClient, whose connection and session
// live on, waits for the delete (see [Client.Close]). Lock parents are
// CONTAINER nodes that ZooKeeper removes once they are empty (in kazoo's
// layout, PERSISTENT nodes, as kazoo makes them).
//
// # Logging and metrics
//
// The Client logs through the [log/slog] logger set with [WithLogger]
// (by default nothing). Each acquire, also one refused before it queues,
// logs "zklock: acquire started" and then "zklock: acquired" (node, wait,
// position) or "zklock: acquire failed" (wait, cause, err); each hold's
// end logs "zklock: released" (held); each revocation request "zklock:
// revocation requested": all at Debug level, with the path, the recipe and
// the story's id, so a logger at Info or above costs acquire and release
// nothing. A
// lost hold is logged at Warn with its cause (holds lost together to a
// connection change, in one record), and connection state changes at
// Info.
//
// [WithObserver] receives the same events as values ([Event]), for
// metrics and tracing: every acquire ends in one outcome, every hold in
// one end, and each event carries its [Recipe], its [Cause] and an ID that
// ties them together (see [EventKind]). Two adapters, each a module of its
// own so that the library's users inherit nothing, turn them into
// metrics: github.com/zklock/zklock/zklockprom (Prometheus client_golang
// collectors) and github.com/zklock/zklock/zklockotel (OpenTelemetry
// metrics, after its connection-pool conventions, and a span per
// acquire). Both label by recipe and outcome; the lock's path only on
// request.
//
// # Interoperability with Curator: the znode layout
//
// zklock creates the nodes Curator 5.x creates, with the same names, modes
// and order, so a Go participant and a Java participant of the same recipe
// on the same path exclude each other (different recipes do not: a
// SemaphoreMutex and an InterProcessMutex on one path use different
// layouts). For a recipe at path P (under /ns with [WithNamespace]):
//
//	recipe                      node                                              mode
//	Mutex                       P/_c_<uuid>-lock-<seq10>                          EPHEMERAL_SEQUENTIAL
//	ReadWriteLock, write side   P/_c_<uuid>-__WRIT__<seq10>                       EPHEMERAL_SEQUENTIAL
//	ReadWriteLock, read side    P/_c_<uuid>-__READ__<seq10>                       EPHEMERAL_SEQUENTIAL
//	read while holding write    P/_c_<uuid>-__READ__<seq10 of the own write node> EPHEMERAL
//	Semaphore, internal lock    P/locks/_c_<uuid>-lock-<seq10>                    EPHEMERAL_SEQUENTIAL
//	Semaphore, lease            P/leases/_c_<uuid>-lease-<seq10>                  EPHEMERAL_SEQUENTIAL
//	SemaphoreMutex              a Semaphore of one lease at P: P/locks/…, P/leases/…
//	MultiLock                   the nodes of its member locks
//	Election                    P/_c_<uuid>-latch-<seq10>                         EPHEMERAL_SEQUENTIAL
//	Selector                    P/_c_<uuid>-lock-<seq10>, as a Mutex              EPHEMERAL_SEQUENTIAL
//	parents (P, P/locks, …, /ns) created when missing, empty data                 CONTAINER
//
// In these names:
//
//   - _c_<uuid>- is Curator's protection prefix: "_c_", a random version-4
//     UUID in its 36-character lower-case form, and "-". A create whose
//     outcome is unknown finds its node again by this prefix.
//   - <seq10> is ZooKeeper's sequence suffix, 10 zero-padded digits, shared
//     by all children of the parent. Nodes are ordered by the text after the
//     last occurrence of the lock name ("lock-", "lease-"; for a
//     ReadWriteLock after the last "__READ__", then after the last
//     "__WRIT__"), compared as Java compares strings. Every child of a lock
//     path takes part in the order: keep lock paths free of other nodes.
//   - The read node of a downgrade is created in one transaction with a
//     check that the write node still exists; it sorts at the write node's
//     place, so writers queued behind stay behind (Curator 5.5 and later).
//
// An Election's nodes are ordered by the text after the last "latch-",
// like a Mutex's, the first leads, and each other participant watches the
// node just before its own (Curator's LeaderLatch). Node data: an
// Election's nodes hold the participant id as UTF-8 (Curator's default id
// is empty); a Selector's hold its id, or without one the Client's
// [WithNodeData], as a LeaderSelector without setId holds Curator's
// default data. Lock and lease nodes hold the data given with [WithLockData],
// or else the Client's [WithNodeData] (by default the host's IP address,
// as Curator's defaultData); the Semaphore's internal lock nodes always
// hold the Client's. Unlike Curator, a revocable Mutex keeps its node data
// (Curator writes none). Revocation ([Revoke], Curator's Revoker) sets the
// data of the holder's node to the 10 ASCII bytes "__REVOKE__", whatever
// its version; holders that called [Mutex.MakeRevocable] watch their node
// for it.
//
// # Interoperability with kazoo: LayoutKazoo
//
// With [WithLayout](LayoutKazoo) a recipe creates the nodes of kazoo 2.x,
// Python's ZooKeeper recipes, so that a Go participant and a Python one on
// the same path exclude each other:
//
//	recipe                      node                                              mode
//	Mutex                       P/<uuidhex>__lock__<seq10>      (kazoo's Lock)     EPHEMERAL_SEQUENTIAL
//	ReadWriteLock, write side   P/<uuidhex>__lock__<seq10>      (WriteLock)        EPHEMERAL_SEQUENTIAL
//	ReadWriteLock, read side    P/<uuidhex>__rlock__<seq10>     (ReadLock)         EPHEMERAL_SEQUENTIAL
//	read while holding write    P/<uuidhex>__rlock__<seq10 of the own write node>  EPHEMERAL
//	Election, Selector          P/<uuidhex>__lock__<seq10>      (kazoo's Election) EPHEMERAL_SEQUENTIAL
//	Semaphore, internal lock    P-__lock__/<uuidhex>__lock__<seq10>  (a kazoo Lock) EPHEMERAL_SEQUENTIAL
//	Semaphore, lease            P/<uuidhex>                     (kazoo's Semaphore) EPHEMERAL
//	Semaphore, pool             P, holding max_leases in decimal                  PERSISTENT
//	SemaphoreMutex              a Semaphore of one lease at P (Semaphore(max_leases=1))
//	parents, created when missing, empty data                                     PERSISTENT
//
// <uuidhex> is a random version-4 UUID's 32 lower-case hex digits
// (Python's uuid4().hex); a create whose outcome is unknown finds its node
// again by it, as kazoo does. The contenders are the children whose names
// end in "__lock__" or "__rlock__" and a sequence, ordered by the
// sequence's text; other children are ignored, as kazoo ignores them. A
// writer (and a Mutex, and an Election's participant) waits for the last
// contender before it (a Mutex and an Election for the last "__lock__"
// node, as kazoo's Lock ignores readers); a reader waits for the last
// "__lock__" node before it. kazoo 2.8's ReadLock waits for the last
// writer of all, even one queued after it, and can deadlock with it
// (kazoo issue 649); zklock follows ZooKeeper's recipe. Node data is the
// lock data, or an Election's or a Selector's id, as kazoo's nodes hold
// its identifier; it must be UTF-8, which kazoo's contenders() decodes it
// as (the constructors refuse other data). Parents are persistent, as kazoo's ensure_path makes
// them: a container reaped under a kazoo process would fail its next
// create. A listing that shows the nodes of both layouts fails the
// acquire with [ErrLayoutMismatch].
//
// The Semaphore is kazoo's: the acquirer at the head of the internal
// lock's queue counts every child of the pool P, adds its leases while
// fewer than max_leases are there, and gives the lock up; zklock creates
// each lease in one transaction with a check of its lock node, so that an
// acquirer that lost its place adds none. A pool that records another
// max_leases than the Semaphore's refuses the acquire with a
// [*MaxLeasesError], as kazoo refuses it (data that is no number is not
// checked), and a pool that holds Curator's "leases" or "locks" nodes
// with [ErrLayoutMismatch]. Lease data must be UTF-8 too, which kazoo's
// lease_holders() decodes it as. kazoo has no revocation: a kazoo holder
// ignores [Revoke].
//
// # ZooKeeper versions
//
// ZooKeeper 3.8.0 to 3.8.4 and 3.9.0 to 3.9.1 can lose writes they have
// acknowledged when a follower crashes or restarts around a change of
// leader (ZOOKEEPER-4646, ZOOKEEPER-4643 and ZOOKEEPER-4785; fixed in 3.8.5
// and 3.9.2, with further fixes in 3.9.3). For locks, the write that
// matters is a delete: a released or abandoned lock node that comes back
// blocks the queue for as long as its session lives. The Client remembers
// its recent deletes and, after every reconnect with the same session,
// deletes again any of them that exists once more, so such a node does not
// block for long; a node of another session, or a create that was undone,
// it cannot see. Run 3.8.5 or later, or 3.9.3 or later.
//
// # Errors
//
// Errors wrap the package's sentinels ([ErrLocked], [ErrNotHeld],
// [ErrLockLost], [ErrClosed], [ErrInvalidPath], [ErrNotConnected], ...) and
// name the path they concern; test them with errors.Is. A message says
// "zklock: " once, then what failed and why.
package zklock

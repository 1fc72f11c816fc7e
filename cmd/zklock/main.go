// Command zklock inspects, revokes and takes zklock's and Apache Curator's
// distributed locks on ZooKeeper (the two share one znode layout), in the
// manner of etcdctl lock and consul lock; inspect, list, leader, break and
// revoke also read Python's kazoo locks (kazoo's layout).
//
// Usage:
//
//	zklock inspect [flags] PATH          show the queue of the lock at PATH
//	zklock list    [flags] PREFIX        list the locks under PREFIX
//	zklock revoke  [flags] PATH NODE     ask the holder of NODE to release
//	zklock break   [flags] PATH NODE     delete NODE, ending its hold
//	zklock break -holder [flags] PATH    delete the holder's node
//	zklock leader  [flags] PATH          print who leads the election at PATH
//	zklock exec    [flags] PATH -- CMD [ARGS...]
//	                                     run CMD while holding the lock
//	zklock exec -latch ID [flags] PATH -- CMD [ARGS...]
//	                                     run CMD while leading the election
//	zklock dev [-servers N]              run ZooKeeper for local development
//	zklock version                       print the version (also -version)
//	zklock help [COMMAND]                print usage
//
// Common flags: -servers host:port,... (default $ZK_SERVERS), -namespace,
// -auth user:password (digest), -session-timeout (default 30s, the
// library's default), -connect-timeout (default 10s). Run "zklock help
// COMMAND" for each command's flags.
//
// # inspect
//
// inspect lists every participant of the lock at PATH, in queue order,
// and says which recipe the layout belongs to: "mutex" (nodes
// ..lock-<seq>; also a Selector, Curator's LeaderSelector), "latch" (nodes
// ..latch-<seq>: an Election, Curator's LeaderLatch, whose holder is the
// leader and whose owners are participant ids; the leader's id is shown
// on a line of its own (leader: "node-1"), and in the JSON as "leader"),
// "rwlock" (__READ__ and __WRIT__ nodes), "semaphore" (lease nodes
// ..lease-<seq> under PATH/leases, and acquirers, a mutex's nodes, under
// PATH/locks), "none" (no participant: the lock is free) or "unknown". A
// semaphore is known by what its leases node holds: a lease node; or
// nothing, beside a PATH/locks that holds nothing but lock nodes (an idle
// semaphore, or acquirers queued before any lease is made). A child named
// leases or locks that holds anything else (a mutex named leases, the
// parent of other lock paths) is a path like any other. A
// Selector's layout is a mutex's, which inspect cannot tell apart: with
// -selector, inspect reads a mutex layout as a Selector's, names the
// recipe "selector", and shows its holder's owner (the participant id) as
// the leader, as for a latch; -selector refuses a rwlock's, a semaphore's
// or an unknown layout (exit 1). If there is no node at PATH, inspect says
// so and exits 4, with a hint when the likely reason is a namespace: a
// Client made with zklock.WithNamespace keeps its locks under /ns, which
// -namespace names. Holders are decided with the library's own
// predicates: the first node of a mutex or a latch; the first writer,
// or the readers ahead of the first writer, of a read/write lock. A
// semaphore does not store its number of leases, so every lease node is
// shown as a holder, except a lease still being granted: one created by
// the acquirer that holds the semaphore's internal lock (PATH/locks), which
// shows as a waiter; acquirers queued on PATH/locks wait too. The count of
// waiters of a semaphore is the count of its acquirers (PATH/locks): a
// lease node still being granted belongs to the first of them. Children of
// PATH that are not lock nodes (such as the container of another lock
// below PATH) are not participants: they are listed apart ("others").
//
// kazoo's layout (kazoo 2.x) is read with the library's own predicates:
// "kazoo-lock" (nodes <uuid hex>__lock__<seq>: a kazoo Lock, a WriteLock
// alone, or an Election, as -selector and leader read it,
// "kazoo-election"; the first contender holds), "kazoo-rwlock" (with
// <uuid hex>__rlock__<seq> nodes, a ReadLock's: a writer holds when no
// contender is before it, a reader when no writer is), "kazoo-semaphore"
// (a pool node whose children are leases, <uuid hex>, all holders; its
// data, max_leases, shown as "max_leases"; its acquirers, all waiting,
// are the contenders of the kazoo Lock beside it, PATH-__lock__, shown
// with their full paths, and list does not list that lock again). kazoo
// contenders are ordered by sequence, as text, as kazoo orders them; one
// that is not ephemeral (kazoo's acquire(ephemeral=False)) takes part,
// with session "0x0". A path that holds Curator's nodes and kazoo's (or
// two recipes' nodes) is "mixed": each layout's nodes are read by its own
// rules, Curator's first, and "readings" names the recipes; the processes
// of each see only their own nodes, so each reading may have a holder,
// and all are shown and counted, never hidden.
//
// With -json, inspect prints one JSON object (one per line with -watch):
//
//	{
//	  "path": "/locks/job",       // as given, relative to -namespace
//	  "recipe": "mutex",          // mutex | latch | rwlock | semaphore | kazoo-lock | kazoo-rwlock |
//	                              // kazoo-semaphore | mixed | none | unknown (selector or kazoo-election
//	                              // with -selector, for a mutex or a kazoo-lock layout)
//	  "leader": "node-1",         // latch, selector or kazoo-election only: the leader's id; omitted with no leader
//	  "exists": true,             // whether PATH exists
//	  "holders": 1, "waiters": 2,
//	  "others": ["sub"],          // children that are not lock nodes; omitted if none
//	  "readings": ["mutex", "kazoo-lock"], // mixed only: the recipe of each layout's nodes, in the order of "nodes"
//	  "max_leases": 3,            // kazoo-semaphore only: its pool's data; omitted if not a number
//	  "nodes": [{
//	    "position": 0,            // place in the queue, from 0, per queue (and per layout)
//	    "queue": "lock",          // lock | leases | locks (the semaphore's internal lock; a kazoo
//	                              // semaphore's PATH-__lock__)
//	    "layout": "curator",      // curator | kazoo; omitted for a node of no known layout
//	    "kind": "lock",           // lock | read | write | lease | acquirer | unknown
//	    "role": "holder",         // holder | waiter | unknown
//	    "name": "_c_...-lock-0000000000",
//	    "path": "/locks/job/_c_...-lock-0000000000",
//	    "session": "0x1000012345a0001", // ephemeralOwner, hex; "0x0" if persistent
//	    "owner": "10.0.0.7",      // node data as text (hex if not printable)
//	    "revoked": true,          // the data is a revocation request, "__REVOKE__"
//	                              // (tables show the owner as "(revoked)"); omitted if not
//	    "created": "2026-01-02T15:04:05.123Z",
//	    "age_ms": 1520,
//	    "token": 4294967312       // fencing token: the node's czxid, as Mutex.Token
//	  }]
//	}
//
// With -watch, inspect prints again on every change of the lock's children
// (ZooKeeper watches), until SIGINT or SIGTERM, and then exits 0. It sets
// its watches on a second session of its own, with the same servers and
// -auth, since the library's Client offers no watch; revoke -wait does
// too.
//
// # leader
//
// leader prints who leads the election at PATH: a leader latch (nodes
// ..latch-<seq>: zklock's Election, Curator's LeaderLatch), a Selector
// (nodes ..lock-<seq>: zklock's Selector, Curator's LeaderSelector, a
// mutex's layout) or a kazoo Election (nodes <uuid hex>__lock__<seq>, a
// kazoo Lock's layout: recipe "kazoo-election"). The leader is the first
// participant in queue order whose node exists when read; its id is its
// node's data:
//
//	leader: "node-1" (latch, 3 participants)
//	node: /locks/lead/_c_...-latch-0000000007 (session 0x1000012345a0001, age 1m3s, token 4294967312)
//
// (a revoked Selector node's id shows as "(revoked)"). leader exits 4 if
// PATH does not exist, and 1 if no participant takes part ("no leader:
// PATH has no participants") or if PATH holds another recipe ("PATH is a
// rwlock, not an election") or the nodes of two layouts ("PATH holds the
// nodes of two layouts (latch and kazoo-lock)": two holders, no one
// leader). With -json, it prints one JSON object, also when there is no
// leader or no PATH:
//
//	{
//	  "path": "/locks/lead",
//	  "recipe": "latch",          // latch | selector | kazoo-election | none
//	  "exists": true,
//	  "participants": 3,
//	  "leader": "node-1",         // the leader's id; omitted with no leader
//	  "node": {...}               // the leader's node, as in inspect's "nodes"; omitted with no leader
//	}
//
// # revoke
//
// revoke writes Curator's revocation message into NODE (a node name, a
// unique suffix of one such as its sequence number, or a full path), as
// Curator's Revoker.attemptRevoke does. Holders that made their lock
// revocable (zklock's Mutex.MakeRevocable, Curator's makeRevocable) are
// asked to release; revocation is cooperative, and whether a holder is
// revocable cannot be seen in ZooKeeper: revoke says that it asked, and
// with -wait D waits up to D for the node to go (exit 1 if it stays).
// The revocation message replaces the node's data, its owner: revoke
// prints the owner and session it replaced,
//
//	revocation requested: /locks/job/_c_...-lock-0000000003 (owner 10.0.0.7, session 0x1000012345a0001; its node data now reads __REVOKE__)
//
// or, for a node already revoked, "(session 0x...; already revoked: its
// owner is no longer recorded)". inspect, list and break show a revoked
// node's owner as "(revoked)". A kazoo node gets the message too, and
// revoke adds a line: a kazoo process ignores revocation requests (kazoo
// has no revocation), while a zklock holder in kazoo's layout that called
// Mutex.MakeRevocable honours it. The leases of a semaphore, Curator's or
// kazoo's, are refused.
//
// # break
//
// break deletes NODE (named as for revoke: a lock node, or a semaphore's
// lease or acquirer node, as leases/NAME, locks/NAME or its full path),
// which ends its holder's hold, as an expiry of its session would; the
// holder notices (its hold context is cancelled with zklock.ErrLockLost),
// and the next in the queue gets the lock. It asks for confirmation (y/N)
// on a terminal; with -force it does not ask, and without -force it
// refuses if stdin is not a terminal (exit 2). It prints what it deleted:
// the node, its session and its owner. With -holder, NODE is not given:
// break deletes the node of the lock's one holder, as inspect finds it (a
// mutex's holder, a Selector's or a latch's leader, a read/write lock's
// writer or its one reader, and the same in kazoo's layout); where several
// hold (a semaphore's leases, a read/write lock's readers, a mixed path's
// holders) it refuses (exit 2) and wants NODE; a lock without a holder
// exits 4. break deletes kazoo's nodes as Curator's, a kazoo contender made
// persistent (acquire(ephemeral=False)) too ("not ephemeral" in place of
// its session); a kazoo semaphore's leases are named by their names.
//
// # list
//
// list walks the tree under PREFIX and prints one line per lock found
// (mutex, rwlock, semaphore, latch, kazoo-lock, kazoo-rwlock,
// kazoo-semaphore or mixed, recognised as by inspect; a Selector's layout
// is a mutex's, a kazoo Election's a kazoo-lock's): its path, recipe
// (in the table, a mixed path's readings follow: mixed:mutex+kazoo-lock),
// holders, waiters, the age of its oldest holder (from the holder node's
// creation time) and the holders' owners. A lock without participants (a free lock's empty
// container) is not listed. -waiting lists only the locks that have
// waiters, and -older-than D only those whose oldest holder has held
// longer than D; a lock that cannot be read, or a node under PREFIX that
// cannot be listed (recipe "unknown"), is listed with the error whatever
// the filters, and the walk goes on around it: to the other subtrees, and
// below a lock it cannot read, into the children not named as its nodes.
// The walk goes into every child that is not a lock's own node: a lock's
// path below another lock's, a semaphore's included, is listed too. With
// -json, list prints one JSON array of objects:
//
//	{
//	  "path": "/locks/job",
//	  "recipe": "mutex",                  // mutex | latch | rwlock | semaphore | kazoo-lock | kazoo-rwlock |
//	                                      // kazoo-semaphore | mixed (unknown: a node not listed)
//	  "readings": ["mutex", "kazoo-lock"], // mixed only: each layout's recipe
//	  "holders": 1, "waiters": 2,
//	  "age_ms": 1520,                     // the oldest holder's age; 0 without a holder
//	  "held_since": "2026-01-02T15:04:05.123Z", // its node's creation; omitted without a holder
//	  "owners": ["10.0.0.7"],             // the holders' owners (node data), in queue order
//	  "error": "..."                      // why the lock or node could not be read; omitted otherwise
//	}
//
// # exec
//
// exec acquires the lock at PATH (a Mutex; with -read or -write a side of a
// ReadWriteLock; with -n LEASES a lease of a Semaphore of LEASES leases),
// runs CMD with ZKLOCK_PATH, ZKLOCK_NODE (the lock node's path) and
// ZKLOCK_TOKEN (the hold's fencing token) in its environment, and releases
// the lock when CMD exits. -owner sets the lock node's data (the owner
// inspect shows). With -latch ID, exec instead campaigns in the election
// at PATH (zklock's Election, Curator's LeaderLatch) as participant ID,
// runs CMD once it leads, and resigns when CMD exits; a lost leadership is
// a lost hold. With -revocable, a revocation request ('zklock revoke')
// sends CMD -signal, then SIGKILL after -kill-after, and the lock is
// released when CMD exits. SIGINT, SIGTERM and SIGHUP are forwarded to CMD
// while it runs; while exec waits for the lock, SIGINT and SIGTERM cancel
// the wait and leave no node behind. If the hold is lost while CMD runs,
// CMD gets -signal (default SIGTERM), then SIGKILL after -kill-after
// (default 10s). With -policy standard (the default) the hold is lost at
// the first disconnect; with -policy session, only when the session is
// lost (see zklock.SessionPolicy).
//
// CMD runs in a process group of its own, and exec sends the signals it
// forwards, and -signal and SIGKILL, to that group, as a shell does to a
// job: CMD's own children get them too, and a signal sent to exec's
// process group (a Ctrl-C) reaches CMD once, through exec, not twice. If
// exec's stdin is a terminal and exec runs in its foreground, exec makes
// CMD's group the terminal's foreground group (tcsetpgrp) while CMD runs,
// so that CMD can read the terminal, and takes the terminal back when CMD
// exits; the terminal's Ctrl-C and Ctrl-\ then reach CMD's group only.
// Job control is not passed on: Ctrl-Z stops CMD but not exec, so the
// shell does not get the terminal back until CMD is continued (kill -CONT)
// or killed from elsewhere.
//
// # Exit codes
//
//	0        success; for exec, CMD's own exit code is returned
//	1        error (ZooKeeper, connection, release failed, break not
//	         confirmed, revoke -wait saw no release); leader: no leader
//	2        usage error
//	3        exec: the hold was lost while CMD ran, or revoked before CMD ran
//	4        inspect, list, revoke, break, leader: PATH (or NODE) does
//	         not exist
//	75       exec -try: the lock is busy
//	124      exec -timeout: the lock was not acquired in time
//	126, 127 exec: CMD could not be run, or was not found
//	128+N    exec: CMD died of signal N; or exec was interrupted by signal N
//	         while waiting for the lock (130 SIGINT, 143 SIGTERM, 129 SIGHUP)
package main

import (
	"fmt"
	"io"
	"os"
)

// Exit codes; see the package documentation.
const (
	exitOK       = 0
	exitError    = 1
	exitUsage    = 2
	exitLost     = 3
	exitNoNode   = 4
	exitBusy     = 75
	exitTimeout  = 124
	exitCannot   = 126
	exitNotFound = 127
	exitSignal   = 128 // plus the signal's number
)

// exitCodesText is the exit codes' part of the usage text.
const exitCodesText = `Exit codes:
  0        success; for exec, the command's own exit code is returned
  1        error (ZooKeeper, connection, release failed, break not
           confirmed, revoke -wait saw no release); leader: no leader
  2        usage error
  3        exec: the hold was lost while the command ran, or revoked
           before it ran
  4        inspect, list, revoke, break, leader: the path (or node) does
           not exist
  75       exec -try: the lock is busy
  124      exec -timeout: the lock was not acquired in time
  126, 127 exec: the command could not be run, or was not found
  128+N    exec: the command died of signal N; or exec was interrupted by
           signal N while waiting (130 SIGINT, 143 SIGTERM, 129 SIGHUP)
`

// mainUsage is the usage text of the tool as a whole.
const mainUsage = `zklock: inspect, revoke and take zklock's and Apache Curator's locks.

Usage:
  zklock inspect [flags] PATH              show the lock's queue: holders, waiters, tokens
  zklock list    [flags] PREFIX            list the locks under PREFIX, with their holders
  zklock revoke  [flags] PATH NODE         ask the holder of NODE to release (cooperative)
  zklock break   [flags] PATH NODE         delete NODE, ending its hold (asks first)
  zklock break -holder [flags] PATH        delete the holder's node (asks first)
  zklock leader  [flags] PATH              print who leads the election at PATH
  zklock exec    [flags] PATH -- CMD [ARGS...]
                                           run CMD while holding the lock
  zklock dev [-servers N]                  run ZooKeeper for local development, until Ctrl-C
  zklock version                           print the version (also -version)
  zklock help [COMMAND]                    print usage (also -h)

Common flags: -servers (default $ZK_SERVERS), -namespace, -auth user:password,
-session-timeout (default 30s, the library's default), -connect-timeout
(default 10s). "zklock help COMMAND" lists each command's flags.

`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// command is one subcommand.
type command struct {
	run   func(args []string, stdout, stderr io.Writer) int
	usage func(w io.Writer)
}

// commands returns the subcommands by name.
func commands() map[string]command {
	return map[string]command{
		"inspect": {runInspect, func(w io.Writer) { newInspectFlags().printUsage(w) }},
		"revoke":  {runRevoke, func(w io.Writer) { newRevokeFlags().printUsage(w) }},
		"exec":    {runExec, func(w io.Writer) { newExecFlags().printUsage(w) }},
		"list":    {runList, func(w io.Writer) { newListFlags().printUsage(w) }},
		"break":   {runBreak, func(w io.Writer) { newBreakFlags().printUsage(w) }},
		"leader":  {runLeader, func(w io.Writer) { newLeaderFlags().printUsage(w) }},
		"version": {runVersion, func(w io.Writer) { fmt.Fprint(w, versionUsage) }},
		"dev":     {runDev, func(w io.Writer) { fmt.Fprint(w, devUsage) }},
	}
}

// run runs the tool with args (without the program name) and returns the
// exit code.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, mainUsage, exitCodesText)
		return exitUsage
	}
	cmds := commands()
	switch name := args[0]; name {
	case "help", "-h", "-help", "--help":
		return runHelp(args[1:], stdout, stderr)
	case "-version", "--version":
		return runVersion(args[1:], stdout, stderr)
	default:
		c, ok := cmds[name]
		if !ok {
			fmt.Fprintf(stderr, "zklock: unknown command %q\n\n", name)
			fmt.Fprint(stderr, mainUsage, exitCodesText)
			return exitUsage
		}
		return c.run(args[1:], stdout, stderr)
	}
}

// runHelp prints the usage of the tool, or of one command.
func runHelp(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stdout, mainUsage, exitCodesText)
		return exitOK
	}
	c, ok := commands()[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "zklock: unknown command %q\n\n", args[0])
		fmt.Fprint(stderr, mainUsage, exitCodesText)
		return exitUsage
	}
	c.usage(stdout)
	return exitOK
}

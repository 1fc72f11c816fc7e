"""kazoo_peer: a kazoo process driven line by line over stdin/stdout, so
that Go tests can make a Python kazoo lock and a zklock lock meet on the
same ZooKeeper path. It is written out and run by kazoo.go (package
interop) with Debian's python3-kazoo; it is not part of zklock.

Usage: python3 kazoo_peer.py <sessionTimeoutMs> <host:port> [<host:port>...]

Protocol: the Java peer's (java/ZkLockPeer.java). Every request is one
line, "<tag> <command> [args...]"; every request gets exactly one reply
line, "<tag> ok [result]" or "<tag> err <message>". Replies can come out
of order: a command bound to an id (acquire, release, run) runs on that
id's own thread, so while "acquire a ..." blocks, "cancel a", commands
for other ids and the unbound commands still answer. Asynchronous lines
start with "event ": "event ready <versions>" once the client is
connected, "event state <KazooState>" at every change of the client's
state (SUSPENDED, LOST, CONNECTED), "event leading <id>" and
"event resigned <id>" when an election's term begins and ends (the end
is written before kazoo releases the election's lock, so a reply read
after a later leader began comes after it).

Lists (contenders, lease holders, children) are JSON arrays, since
identifiers may be empty or hold spaces.

To add a command: write its function and add one line to COMMANDS.
stdout is written only through emit.
"""

import json
import logging
import os
import queue
import sys
import threading
import time

import kazoo
from kazoo.client import KazooClient
from kazoo.exceptions import CancelledError, LockTimeout
from kazoo.recipe.election import Election
from kazoo.recipe.lock import Lock, Semaphore
from kazoo.retry import KazooRetry

log = logging.getLogger("peer")

# The protocol's stdout: fd 1 is pointed at stderr below, so that a stray
# print (ours or a library's) lands in the log, not in the protocol.
_out = None
_emit_lock = threading.Lock()

client = None
hosts = ""
session_timeout = 10.0

entries = {}  # id -> entry (a kazoo Lock or Semaphore, or an Elected)
entries_lock = threading.Lock()  # guards entries and workers
workers = {}  # base id -> Worker


def emit(line):
    """Writes one line to stdout; every writer goes through here."""
    line = line.replace("\n", " ").replace("\r", " ")
    log.info("-> %s", line)
    with _emit_lock:
        try:
            _out.write(line + "\n")
            _out.flush()
        except Exception:
            # stdout is gone: the Go side has ended; nothing to report to.
            os._exit(3)


# ---- entries -----------------------------------------------------------


class Elected(object):
    """A kazoo Election whose terms last until "resign": each term reports
    its start and end as events."""

    def __init__(self, id_, path, identifier):
        self.id = id_
        self.election = Election(client, path, identifier)
        self.resign_event = threading.Event()
        self.leading = False

    def run(self):
        """Runs the election once: "true" if it led, "false" if it was
        cancelled before it led."""
        led = []

        def lead():
            led.append(True)
            self.leading = True
            emit("event leading " + self.id)
            try:
                self.resign_event.wait()
            finally:
                self.leading = False
                self.resign_event.clear()
                # Before kazoo releases the lock: nobody else leads yet.
                emit("event resigned " + self.id)

        self.election.run(lead)
        return "true" if led else "false"

    def resign(self):
        if not self.leading:
            raise RuntimeError("not leading")
        self.resign_event.set()


def define(id_, entry):
    with entries_lock:
        if id_ in entries:
            raise ValueError("id already defined: " + id_)
        entries[id_] = entry


def entry(id_, *types):
    with entries_lock:
        e = entries.get(id_)
    if e is None:
        raise ValueError("no such id: " + id_)
    if not isinstance(e, types):
        raise ValueError(
            "%s is a %s, not a %s"
            % (id_, type(e).__name__, " or ".join(t.__name__ for t in types))
        )
    return e


def as_json(items):
    return json.dumps(list(items), separators=(",", ":"))


# ---- commands ----------------------------------------------------------


def cmd_lock(a):
    define(a[0], client.Lock(a[1], a[2]))


def cmd_rlock(a):
    define(a[0], client.ReadLock(a[1], a[2]))


def cmd_wlock(a):
    define(a[0], client.WriteLock(a[1], a[2]))


def cmd_semaphore(a):
    define(a[0], client.Semaphore(a[1], a[3], max_leases=int(a[2])))


def cmd_election(a):
    define(a[0], Elected(a[0], a[1], a[2]))


def cmd_acquire(a):
    """acquire <id> <ms>: "true", "false" (timed out) or "cancelled"."""
    e = entry(a[0], Lock, Semaphore)
    try:
        got = e.acquire(blocking=True, timeout=int(a[1]) / 1000.0)
    except LockTimeout:
        return "false"
    except CancelledError:
        return "cancelled"
    return "true" if got else "false"


def cmd_release(a):
    if not entry(a[0], Lock, Semaphore).release():
        raise RuntimeError(a[0] + " is not acquired")


def cmd_cancel(a):
    e = entry(a[0], Lock, Semaphore, Elected)
    (e.election if isinstance(e, Elected) else e).cancel()


def cmd_contenders(a):
    e = entry(a[0], Lock, Elected)
    return as_json((e.election if isinstance(e, Elected) else e).contenders())


def cmd_node(a):
    """node <id>: the name of the id's lock node (a Lock's or an
    Election's, while it queues or holds), or of its lease (a Semaphore's,
    while it holds one); "" if none."""
    e = entry(a[0], Lock, Semaphore, Elected)
    if isinstance(e, Semaphore):
        return e.create_path.rsplit("/", 1)[1] if e.is_acquired else ""
    lock = e.election.lock if isinstance(e, Elected) else e
    return lock.node or ""


def cmd_leaseholders(a):
    return as_json(entry(a[0], Semaphore).lease_holders())


def cmd_run(a):
    return entry(a[0], Elected).run()


def cmd_resign(a):
    entry(a[0], Elected).resign()


def cmd_leading(a):
    return "true" if entry(a[0], Elected).leading else "false"


def cmd_children(a):
    return as_json(client.get_children(a[0]))


def cmd_state(a):
    return str(client.state)


def cmd_expire(a):
    """expire: ends the client's session on the servers, as Curator's
    KillSession does: another client attaches to it with its id and
    password and closes it. The client then sees LOST, and starts a new
    session; the reply comes once it has (at most 30 s): "<old> <new>",
    the two session ids."""
    cid = client.client_id
    if cid is None:
        raise RuntimeError("not connected")
    other = KazooClient(hosts=hosts, client_id=cid, timeout=session_timeout)
    try:
        other.start(timeout=15)
        other.stop()
    finally:
        other.close()
    deadline = time.monotonic() + 30
    while True:
        now = client.client_id
        if now is not None and now[0] != cid[0]:
            return "0x%x 0x%x" % (cid[0], now[0])
        if time.monotonic() > deadline:
            raise RuntimeError("no new session within 30 s of the expiry")
        time.sleep(0.02)


def cmd_ping(a):
    return "pong"


# name -> (argument count, bound to the thread of its first argument, function)
COMMANDS = {
    "lock": (3, False, cmd_lock),  # lock <id> <path> <identifier>
    "rlock": (3, False, cmd_rlock),
    "wlock": (3, False, cmd_wlock),
    "semaphore": (4, False, cmd_semaphore),  # semaphore <id> <path> <max> <identifier>
    "election": (3, False, cmd_election),  # election <id> <path> <identifier>
    "acquire": (2, True, cmd_acquire),
    "release": (1, True, cmd_release),
    "cancel": (1, False, cmd_cancel),
    "contenders": (1, False, cmd_contenders),
    "node": (1, False, cmd_node),
    "leaseholders": (1, False, cmd_leaseholders),
    "run": (1, True, cmd_run),
    "resign": (1, False, cmd_resign),
    "leading": (1, False, cmd_leading),
    "children": (1, False, cmd_children),
    "state": (0, False, cmd_state),
    "expire": (0, False, cmd_expire),
    "ping": (0, False, cmd_ping),
}


# ---- main loop -----------------------------------------------------------


class Worker(object):
    """A daemon thread that runs one id's bound commands in order."""

    def __init__(self, name):
        self.queue = queue.Queue()
        t = threading.Thread(target=self._loop, name="lock-" + name)
        t.daemon = True
        t.start()

    def _loop(self):
        while True:
            self.queue.get()()


def worker_of(id_):
    base = id_.split(".", 1)[0]
    with entries_lock:
        w = workers.get(base)
        if w is None:
            w = workers[base] = Worker(base)
        return w


def handle(tag, fn, args):
    try:
        result = fn(args)
        reply = "ok " + result if result else "ok"
    except Exception as e:
        reply = "err %s: %s" % (type(e).__name__, e)
    emit(tag + " " + reply)


def shutdown(code):
    try:
        if client is not None:
            client.stop()  # ends the session: its ephemeral nodes go at once
            client.close()
    finally:
        os._exit(code)


def serve(line):
    words = line.split()
    tag = words[0]
    if len(words) < 2:
        emit(tag + " err missing command")
        return
    name, args = words[1], words[2:]
    if name == "quit":
        try:
            client.stop()
        finally:
            emit(tag + " ok")
            os._exit(0)
    c = COMMANDS.get(name)
    if c is None:
        emit(tag + " err unknown command: " + name)
        return
    nargs, bound, fn = c
    if len(args) != nargs:
        emit("%s err %s takes %d arguments, got %d" % (tag, name, nargs, len(args)))
        return
    if bound:
        worker_of(args[0]).queue.put(lambda: handle(tag, fn, args))
    else:
        handle(tag, fn, args)


def main(argv):
    global _out, client, hosts, session_timeout
    _out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    level = os.environ.get("ZKLOCK_KAZOO_LOG_LEVEL", "INFO").upper()
    logging.basicConfig(
        stream=sys.stderr,
        level=level,
        format="%(asctime)s.%(msecs)03d [%(threadName)s] %(levelname)s %(name)s: %(message)s",
        datefmt="%H:%M:%S",
    )
    if len(argv) < 3:
        sys.stderr.write("usage: kazoo_peer.py <sessionTimeoutMs> <host:port> [<host:port>...]\n")
        os._exit(2)
    session_timeout = int(argv[1]) / 1000.0
    hosts = ",".join(argv[2:])
    client = KazooClient(
        hosts=hosts,
        timeout=session_timeout,
        connection_retry=KazooRetry(max_tries=-1, delay=0.1, max_delay=1),
    )
    client.add_listener(lambda state: emit("event state " + str(state)))
    try:
        client.start(timeout=30)
    except Exception as e:
        emit("event failed no connection to %s within 30s: %s" % (hosts, e))
        shutdown(1)
    emit("event ready kazoo=%s python=%s" % (kazoo.__version__, sys.version.split()[0]))

    stdin = os.fdopen(0, "r", encoding="utf-8")
    while True:
        line = stdin.readline()
        if not line:
            break
        line = line.strip()
        if not line:
            continue
        log.info("<- %s", line)
        serve(line)
    shutdown(0)  # stdin closed


if __name__ == "__main__":
    main(sys.argv)

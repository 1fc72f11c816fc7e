// ZkLockPeer: a Curator process driven line by line over stdin/stdout, so
// that Go tests can make a Java Curator lock and a zklock lock meet on the
// same ZooKeeper path. It is compiled and run by peer.go (package interop);
// it is not part of zklock.
//
// Usage: java ZkLockPeer <sessionTimeoutMs> <host:port> [<host:port>...]
//
// Protocol. Every request is one line: "<tag> <command> [args...]", where
// tag is a token chosen by the caller (peer.go uses increasing numbers).
// Every request gets exactly one reply line: "<tag> ok [result...]" or
// "<tag> err <message>". Replies can come out of order: a command that
// acts on a lock runs on that lock's own thread (Curator locks are owned
// by a thread), so while "acquire a ..." blocks, commands for other locks
// and the unbound commands (participants, revoke, ...) still answer.
// Asynchronous lines start with "event ": "event ready <versions>" once the
// client is connected, "event revoked <id>" when a revocation request
// reaches a lock made revocable with "revocable <id>", "event leading <id>"
// and "event resigned <id>" when a LeaderSelector's term begins and ends
// (the end is written before Curator releases the leadership's lock, so a
// reply read after a later leader began comes after it).
//
// Lock ids: "mutex", "semmutex" and "semaphore" register one id. "rwlock
// <id>" registers <id>.read and <id>.write, both run on <id>'s thread (a
// downgrade needs one thread to own both). Commands bound to an id run on
// the thread of the id's part before the first '.'.
//
// To add a recipe: write a Lock (or another entry class) and add its
// commands to the table in main. stdout is written only through emit.

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintStream;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.imps.ProtectedUtils;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;
import org.apache.curator.framework.recipes.leader.Participant;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreMutex;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.framework.recipes.locks.Revoker;
import org.apache.curator.retry.ExponentialBackoffRetry;

public final class ZkLockPeer {
    private static Writer out;
    private static CuratorFramework client;

    /** id -> lock entry (Lock or Semaphore). */
    private static final Map<String, Object> entries = new ConcurrentHashMap<>();
    /** base id -> the single thread that runs the id's bound commands. */
    private static final Map<String, ExecutorService> threads = new ConcurrentHashMap<>();

    private static final java.time.format.DateTimeFormatter CLOCK =
            java.time.format.DateTimeFormatter.ofPattern("HH:mm:ss.SSS");

    /** Records a protocol line in the log (stderr), for failure reports. */
    static void trace(String dir, String line) {
        System.err.println(java.time.LocalTime.now().format(CLOCK) + " [" + Thread.currentThread().getName() + "] "
                + dir + " " + line);
    }

    /** Writes one line to stdout; every writer goes through here. */
    static void emit(String line) {
        line = line.replace('\n', ' ').replace('\r', ' ');
        trace("->", line);
        synchronized (ZkLockPeer.class) {
            try {
                out.write(line);
                out.write('\n');
                out.flush();
            } catch (Exception e) {
                // stdout is gone: the Go side has ended; nothing to report to.
                System.exit(3);
            }
        }
    }

    // ---- lock entries --------------------------------------------------

    /** What the generic commands (acquire, release, ...) need of a lock. */
    interface Lock {
        boolean acquire(long timeoutMs) throws Exception;

        void release() throws Exception;

        /** The node of the current thread's hold, or null. */
        String lockPath() throws Exception;

        Collection<String> participants() throws Exception;

        void makeRevocable(String id) throws Exception;
    }

    /** An InterProcessMutex (or a read/write side) and its lock path. */
    static final class MutexLock implements Lock {
        final InterProcessMutex mutex;
        final java.util.function.Supplier<String> path;

        MutexLock(InterProcessMutex mutex, java.util.function.Supplier<String> path) {
            this.mutex = mutex;
            this.path = path;
        }

        public boolean acquire(long timeoutMs) throws Exception {
            if (timeoutMs < 0) {
                mutex.acquire();
                return true;
            }
            return mutex.acquire(timeoutMs, TimeUnit.MILLISECONDS);
        }

        public void release() throws Exception {
            mutex.release();
        }

        public String lockPath() {
            return path.get();
        }

        public Collection<String> participants() throws Exception {
            return mutex.getParticipantNodes();
        }

        public void makeRevocable(String id) {
            mutex.makeRevocable(lock -> emit("event revoked " + id));
        }
    }

    /** Exposes the protected getLockPath without reflection. */
    static final class PeerMutex extends InterProcessMutex {
        PeerMutex(CuratorFramework client, String path) {
            super(client, path);
        }

        String lockPathOfThread() {
            return getLockPath();
        }
    }

    static final class PeerWriteLock extends InterProcessReadWriteLock.WriteLock {
        PeerWriteLock(CuratorFramework client, String path) {
            super(client, path, null);
        }

        String lockPathOfThread() {
            return getLockPath();
        }
    }

    static final class PeerReadLock extends InterProcessReadWriteLock.ReadLock {
        PeerReadLock(CuratorFramework client, String path, InterProcessReadWriteLock.WriteLock write) {
            super(client, path, null, write);
        }

        String lockPathOfThread() {
            return getLockPath();
        }
    }

    /** An InterProcessSemaphoreMutex: V2 layout, not revocable. */
    static final class SemMutexLock implements Lock {
        final String path;
        final InterProcessSemaphoreMutex mutex;

        SemMutexLock(String path) {
            this.path = path;
            this.mutex = new InterProcessSemaphoreMutex(client, path);
        }

        public boolean acquire(long timeoutMs) throws Exception {
            if (timeoutMs < 0) {
                mutex.acquire();
                return true;
            }
            return mutex.acquire(timeoutMs, TimeUnit.MILLISECONDS);
        }

        public void release() throws Exception {
            mutex.release();
        }

        public String lockPath() {
            throw new UnsupportedOperationException("InterProcessSemaphoreMutex does not expose its lease node");
        }

        public Collection<String> participants() throws Exception {
            // What InterProcessSemaphoreV2.getParticipantNodes returns: the
            // lease node names, unsorted.
            return client.getChildren().forPath(path + "/leases");
        }

        public void makeRevocable(String id) {
            throw new UnsupportedOperationException("InterProcessSemaphoreMutex is not revocable");
        }
    }

    /** An InterProcessSemaphoreV2 and the leases it has handed out. */
    static final class Semaphore {
        final InterProcessSemaphoreV2 semaphore;
        final Map<String, Lease> leases = new HashMap<>();

        Semaphore(String path, int maxLeases) {
            this.semaphore = new InterProcessSemaphoreV2(client, path, maxLeases);
        }
    }

    /**
     * A LeaderSelector (autoRequeue, with its participant id as node data)
     * whose terms last until "selectorresign": each reports its start and
     * end as events.
     */
    static final class Selector {
        final LeaderSelector selector;
        final java.util.concurrent.Semaphore resign = new java.util.concurrent.Semaphore(0);

        Selector(String id, String path, String participantId) {
            selector = new LeaderSelector(client, path, new LeaderSelectorListenerAdapter() {
                @Override
                public void takeLeadership(CuratorFramework c) throws InterruptedException {
                    emit("event leading " + id);
                    try {
                        resign.acquire();
                    } finally {
                        // Before Curator releases the lock: nobody else leads yet.
                        emit("event resigned " + id);
                    }
                }
            });
            selector.setId(participantId);
            selector.autoRequeue();
        }

        /** Ends the current term; it must be one. */
        void resign() {
            if (!selector.hasLeadership()) {
                throw new IllegalStateException("not leading");
            }
            resign.release();
        }
    }

    // ---- commands ------------------------------------------------------

    interface Handler {
        /** Returns the reply's result ("" for a bare "ok"). */
        String run(String[] a) throws Exception;
    }

    /** A command: argument count, whether it runs on the thread of its first argument (a lock id). */
    static final class Command {
        final int args;
        final boolean bound;
        final Handler handler;

        Command(int args, boolean bound, Handler handler) {
            this.args = args;
            this.bound = bound;
            this.handler = handler;
        }
    }

    static final Map<String, Command> commands = new HashMap<>();

    static void command(String name, int args, boolean bound, Handler h) {
        commands.put(name, new Command(args, bound, h));
    }

    static void define(String id, Object entry) {
        if (entries.putIfAbsent(id, entry) != null) {
            throw new IllegalArgumentException("id already defined: " + id);
        }
    }

    static <T> T entry(String id, Class<T> type) {
        Object e = entries.get(id);
        if (e == null) {
            throw new IllegalArgumentException("no such id: " + id);
        }
        if (!type.isInstance(e)) {
            throw new IllegalArgumentException(id + " is a " + e.getClass().getSimpleName() + ", not a " + type.getSimpleName());
        }
        return type.cast(e);
    }

    static Lock lock(String id) {
        return entry(id, Lock.class);
    }

    static String join(Collection<String> items) {
        return String.join(" ", items);
    }

    /** An election's participants as ids in order, the leader's followed by "*". */
    static String participantIds(Collection<Participant> ps) {
        List<String> out = new ArrayList<>();
        for (Participant p : ps) {
            out.add(p.getId() + (p.isLeader() ? "*" : ""));
        }
        return join(out);
    }

    static void defineCommands() {
        // Generic lock commands, for every Lock.
        command("acquire", 2, true, a -> Boolean.toString(lock(a[0]).acquire(Long.parseLong(a[1]))));
        command("release", 1, true, a -> {
            lock(a[0]).release();
            return "";
        });
        command("lockpath", 1, true, a -> {
            String p = lock(a[0]).lockPath();
            return p == null ? "" : p;
        });
        // Set before each acquire (Curator resets it on release); bound so
        // that it is ordered with the id's acquires.
        command("revocable", 1, true, a -> {
            lock(a[0]).makeRevocable(a[0]);
            return "";
        });
        command("participants", 1, false, a -> join(lock(a[0]).participants()));

        // Recipes.
        command("mutex", 2, false, a -> {
            PeerMutex m = new PeerMutex(client, a[1]);
            define(a[0], new MutexLock(m, m::lockPathOfThread));
            return "";
        });
        command("rwlock", 2, false, a -> {
            if (a[0].contains(".")) {
                throw new IllegalArgumentException("rwlock id must not contain '.': " + a[0]);
            }
            PeerWriteLock w = new PeerWriteLock(client, a[1]);
            PeerReadLock r = new PeerReadLock(client, a[1], w);
            define(a[0] + ".write", new MutexLock(w, w::lockPathOfThread));
            define(a[0] + ".read", new MutexLock(r, r::lockPathOfThread));
            return "";
        });
        command("read", 2, true, a -> Boolean.toString(lock(a[0] + ".read").acquire(Long.parseLong(a[1]))));
        command("write", 2, true, a -> Boolean.toString(lock(a[0] + ".write").acquire(Long.parseLong(a[1]))));
        command("unread", 1, true, a -> {
            lock(a[0] + ".read").release();
            return "";
        });
        command("unwrite", 1, true, a -> {
            lock(a[0] + ".write").release();
            return "";
        });
        command("semmutex", 2, false, a -> {
            define(a[0], new SemMutexLock(a[1]));
            return "";
        });
        command("semaphore", 3, false, a -> {
            define(a[0], new Semaphore(a[1], Integer.parseInt(a[2])));
            return "";
        });
        command("lease", 2, true, a -> {
            Semaphore s = entry(a[0], Semaphore.class);
            long ms = Long.parseLong(a[1]);
            Lease l = ms < 0 ? s.semaphore.acquire() : s.semaphore.acquire(ms, TimeUnit.MILLISECONDS);
            if (l == null) {
                return "none";
            }
            s.leases.put(l.getNodeName(), l);
            return l.getNodeName();
        });
        command("unlease", 2, true, a -> {
            Semaphore s = entry(a[0], Semaphore.class);
            Lease l = s.leases.remove(a[1]);
            if (l == null) {
                throw new IllegalArgumentException("no lease " + a[1] + " from " + a[0]);
            }
            l.close();
            return "";
        });
        command("semparticipants", 1, false, a -> join(entry(a[0], Semaphore.class).semaphore.getParticipantNodes()));

        // Leader latches: "latch <id> <path> <participantId>" starts one.
        command("latch", 3, false, a -> {
            LeaderLatch l = new LeaderLatch(client, a[1], a[2]);
            define(a[0], l);
            l.start();
            return "";
        });
        command("latchawait", 2, true, a -> Boolean.toString(entry(a[0], LeaderLatch.class).await(Long.parseLong(a[1]), TimeUnit.MILLISECONDS)));
        command("latchhas", 1, false, a -> Boolean.toString(entry(a[0], LeaderLatch.class).hasLeadership()));
        command("latchleader", 1, false, a -> {
            Participant p = entry(a[0], LeaderLatch.class).getLeader();
            return p.isLeader() ? p.getId() : "";
        });
        command("latchparticipants", 1, false, a -> participantIds(entry(a[0], LeaderLatch.class).getParticipants()));
        command("latchclose", 1, true, a -> {
            entry(a[0], LeaderLatch.class).close();
            entries.remove(a[0]);
            return "";
        });

        // Leader selectors: "selector <id> <path> <participantId>" starts one.
        command("selector", 3, false, a -> {
            Selector s = new Selector(a[0], a[1], a[2]);
            define(a[0], s);
            s.selector.start();
            return "";
        });
        command("selectorresign", 1, false, a -> {
            entry(a[0], Selector.class).resign();
            return "";
        });
        command("selectorhas", 1, false, a -> Boolean.toString(entry(a[0], Selector.class).selector.hasLeadership()));
        command("selectorparticipants", 1, false, a -> participantIds(entry(a[0], Selector.class).selector.getParticipants()));
        command("selectorclose", 1, false, a -> {
            entry(a[0], Selector.class).selector.close();
            entries.remove(a[0]);
            return "";
        });

        // Unbound helpers.
        command("revoke", 1, false, a -> {
            Revoker.attemptRevoke(client, a[0]);
            return "";
        });
        command("isprotected", 1, false, a -> Boolean.toString(ProtectedUtils.isProtectedZNode(a[0])));
        command("children", 1, false, a -> join(client.getChildren().forPath(a[0])));
        command("ping", 0, false, a -> "pong");
    }

    // ---- main loop -----------------------------------------------------

    static ExecutorService threadOf(String id) {
        int dot = id.indexOf('.');
        String base = dot < 0 ? id : id.substring(0, dot);
        return threads.computeIfAbsent(base, b -> Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "lock-" + b);
            t.setDaemon(true);
            return t;
        }));
    }

    static void handle(String tag, Command c, String[] args) {
        String reply;
        try {
            String result = c.handler.run(args);
            reply = result.isEmpty() ? "ok" : "ok " + result;
        } catch (Throwable e) {
            reply = "err " + e;
        }
        emit(tag + " " + reply);
    }

    static String versions() {
        String curator = "unknown";
        try (InputStream in = CuratorFramework.class.getResourceAsStream(
                "/META-INF/maven/org.apache.curator/curator-framework/pom.properties")) {
            if (in != null) {
                Properties p = new Properties();
                p.load(in);
                curator = p.getProperty("version", curator);
            }
        } catch (Exception e) {
            // keep "unknown"
        }
        String zk;
        try {
            zk = org.apache.zookeeper.Version.getVersion();
        } catch (Throwable e) {
            zk = "unknown";
        }
        return "curator=" + curator + " zookeeper=" + zk + " java=" + System.getProperty("java.version");
    }

    static void shutdown(int code) {
        try {
            if (client != null) {
                client.close(); // ends the session: its ephemeral nodes go at once
            }
        } finally {
            System.exit(code);
        }
    }

    public static void main(String[] argv) throws Exception {
        // Nothing but emit may write to stdout.
        out = new OutputStreamWriter(new FileOutputStream(FileDescriptor.out), StandardCharsets.UTF_8);
        System.setOut(new PrintStream(new FileOutputStream(FileDescriptor.err), true, "UTF-8"));

        if (argv.length < 2) {
            System.err.println("usage: ZkLockPeer <sessionTimeoutMs> <host:port> [<host:port>...]");
            System.exit(2);
        }
        int sessionTimeoutMs = Integer.parseInt(argv[0]);
        List<String> servers = new ArrayList<>();
        for (int i = 1; i < argv.length; i++) {
            servers.add(argv[i]);
        }
        defineCommands();

        client = CuratorFrameworkFactory.builder()
                .connectString(String.join(",", servers))
                .sessionTimeoutMs(sessionTimeoutMs)
                .connectionTimeoutMs(Math.min(15000, sessionTimeoutMs))
                .retryPolicy(new ExponentialBackoffRetry(100, 3))
                // Keep the servers we were given: the ensemble's own view of
                // its client addresses (e.g. inside containers) may not be
                // reachable from here.
                .ensembleTracker(false)
                .build();
        client.start();
        if (!client.blockUntilConnected(30, TimeUnit.SECONDS)) {
            emit("event failed no connection to " + servers + " within 30s");
            shutdown(1);
        }
        emit("event ready " + versions());

        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            line = line.trim();
            if (line.isEmpty()) {
                continue;
            }
            trace("<-", line);
            String[] words = line.split("\\s+");
            String tag = words[0];
            if (words.length < 2) {
                emit(tag + " err missing command");
                continue;
            }
            String name = words[1];
            String[] args = new String[words.length - 2];
            System.arraycopy(words, 2, args, 0, args.length);
            if (name.equals("quit")) {
                try {
                    client.close();
                } finally {
                    emit(tag + " ok");
                    System.exit(0);
                }
            }
            Command c = commands.get(name);
            if (c == null) {
                emit(tag + " err unknown command: " + name);
                continue;
            }
            if (args.length != c.args) {
                emit(tag + " err " + name + " takes " + c.args + " arguments, got " + args.length);
                continue;
            }
            if (c.bound) {
                threadOf(args[0]).execute(() -> handle(tag, c, args));
            } else {
                handle(tag, c, args);
            }
        }
        shutdown(0); // stdin closed
    }
}

// BenchCurator: the Apache Curator side of zklock's benchmark tool
// (internal/bench). It runs one workload with Curator's recipes, doing what
// the tool's Go side does with zklock, and reports the raw figures as one
// JSON line. It is compiled and run by internal/bench/curator.go; it is not
// part of zklock.
//
// Usage: java BenchCurator <sessionTimeoutMs> <limitMs> <connect> <gateConnect>
//                          <workload> <path> <warmPath> <args...>
//
//   floor       <n> <warmup>              raw create (ephemeral-sequential) + delete pairs
//   uncontended <n> <warmup>              InterProcessMutex acquire + release pairs
//   contended   <c> <ms> <warmup>         c sessions loop on one InterProcessMutex
//   semaphore   <c> <leases> <ms> <warmup> c sessions loop on one InterProcessSemaphoreV2
//   rwread      <c> <ms> <warmup>         c sessions loop on one read lock
//   handoff     <w> <warmup> [<reps>]     w sessions queue behind a gate session, reps times
//   failover    <p> <resign|close> <warmup> <warmReps> <reps>
//                                         p sessions' LeaderLatches; the leader steps down
//                                         reps times, after warmReps unmeasured times
//   manylocks   <n> <g> <warmup>          one session's InterProcessMutex on each of
//                                         <path>-0 .. <path>-(n-1) (parents exist), from g
//                                         threads: acquire all, hold, release all
//
// The gate session (handoff) connects to <gateConnect>, every other session
// to <connect>: the Go side may count their requests apart. Warm-up pairs
// run on <path> for floor and uncontended, and on <warmPath> otherwise.
//
// Protocol on stdout (nothing else writes to it):
//   "versions curator=<v> zookeeper=<v> java=<v>"   first
//   "phase <name>"   then one line "go" is read from stdin before going on:
//                    ready (set up, the measured part comes next), queued
//                    (handoff: every waiter started; failover: every
//                    participant started), drained (handoff: every waiter
//                    of this repetition done; failover: the next leader
//                    leads), held (manylocks: every lock held; the memory
//                    is read next), release (manylocks: the release-all
//                    comes next), measured (done; the tear-down comes next)
//   "result <json>"  last: {"ops":..,"seconds":..,"lat_us":[..],
//                    "per_session":[..],"violations":..,"dnf":..,"error":"..",
//                    "release_seconds":..,"held_heap":..,"held_tasks":..,
//                    "heap_approx":..}
// Every wait is bounded by <limitMs> from the start: past it the result
// says dnf, after the sessions have been closed.

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintStream;
import java.io.Writer;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.ZooKeeper;

public final class BenchCurator {
    /** How many sessions connect at once. */
    static final int PARALLEL_CONNECTS = 64;
    /** Bounds closing every session at the end. */
    static final long CLOSE_LIMIT_MS = 60_000;

    static Writer out;
    static BufferedReader in;
    static long deadlineNanos;
    static int sessionTimeoutMs;
    static final List<CuratorFramework> sessions = new ArrayList<>();

    /** Thrown when the time limit passes. */
    static final class Timeout extends Exception {
        Timeout(String what) {
            super("time limit reached: " + what);
        }
    }

    /** One participant's handle on a recipe: acquire, then release. */
    interface Locker {
        boolean acquire(long timeoutMs) throws Exception;

        void release() throws Exception;
    }

    /** An InterProcessMutex, or one side of an InterProcessReadWriteLock. */
    static final class MutexLocker implements Locker {
        final InterProcessMutex mutex;

        MutexLocker(InterProcessMutex mutex) {
            this.mutex = mutex;
        }

        public boolean acquire(long timeoutMs) throws Exception {
            return mutex.acquire(timeoutMs, TimeUnit.MILLISECONDS);
        }

        public void release() throws Exception {
            mutex.release();
        }
    }

    /** One lease at a time of an InterProcessSemaphoreV2. */
    static final class LeaseLocker implements Locker {
        final InterProcessSemaphoreV2 semaphore;
        Lease lease;

        LeaseLocker(InterProcessSemaphoreV2 semaphore) {
            this.semaphore = semaphore;
        }

        public boolean acquire(long timeoutMs) throws Exception {
            lease = semaphore.acquire(timeoutMs, TimeUnit.MILLISECONDS);
            return lease != null;
        }

        public void release() throws Exception {
            semaphore.returnLease(lease);
            lease = null;
        }
    }

    /** A new LeaderLatch for each acquire: await leads, close resigns. */
    static final class LatchLocker implements Locker {
        final CuratorFramework client;
        final String path;
        LeaderLatch latch;

        LatchLocker(CuratorFramework client, String path) {
            this.client = client;
            this.path = path;
        }

        public boolean acquire(long timeoutMs) throws Exception {
            latch = new LeaderLatch(client, path);
            latch.start();
            return latch.await(timeoutMs, TimeUnit.MILLISECONDS);
        }

        public void release() throws Exception {
            latch.close();
        }
    }

    /** Makes a Locker on a path for a session. */
    interface Recipe {
        Locker make(CuratorFramework client, String path);
    }

    /** The raw figures of one run; the Go side derives the rest. */
    static final class Result {
        long ops;
        double seconds;
        long[] latUs = new long[0];
        long[] perSession = new long[0];
        long violations;
        boolean dnf;
        String error = "";
        /** manylocks: the release-all's time. */
        double releaseSeconds;
        /** manylocks: heap in use and live threads once all were held, minus before. */
        long heldHeap;
        long heldTasks;
        /** manylocks: heldHeap is totalMemory - freeMemory after System.gc(), approximate. */
        boolean heapApprox;

        String json() {
            StringBuilder b = new StringBuilder("{");
            b.append("\"ops\":").append(ops);
            b.append(",\"seconds\":").append(seconds);
            b.append(",\"lat_us\":").append(array(latUs));
            b.append(",\"per_session\":").append(array(perSession));
            b.append(",\"violations\":").append(violations);
            b.append(",\"dnf\":").append(dnf);
            b.append(",\"error\":\"").append(escape(error)).append('"');
            b.append(",\"release_seconds\":").append(releaseSeconds);
            b.append(",\"held_heap\":").append(heldHeap);
            b.append(",\"held_tasks\":").append(heldTasks);
            b.append(",\"heap_approx\":").append(heapApprox);
            return b.append('}').toString();
        }

        static String array(long[] a) {
            StringBuilder b = new StringBuilder("[");
            for (int i = 0; i < a.length; i++) {
                if (i > 0) {
                    b.append(',');
                }
                b.append(a[i]);
            }
            return b.append(']').toString();
        }

        static String escape(String s) {
            StringBuilder b = new StringBuilder();
            for (char c : s.toCharArray()) {
                if (c == '"' || c == '\\') {
                    b.append('\\').append(c);
                } else if (c < 0x20) {
                    b.append(' ');
                } else {
                    b.append(c);
                }
            }
            return b.toString();
        }
    }

    /** Writes one line to stdout; every writer goes through here. */
    static synchronized void emit(String line) {
        try {
            out.write(line.replace('\n', ' '));
            out.write('\n');
            out.flush();
        } catch (Exception e) {
            System.exit(3); // the Go side is gone
        }
    }

    /** Announces a phase and waits for the Go side's "go". */
    static void phase(String name) throws Exception {
        emit("phase " + name);
        String line = in.readLine();
        if (line == null || !line.trim().equals("go")) {
            throw new IllegalStateException("phase " + name + ": expected go, got " + line);
        }
    }

    /** Milliseconds left before the time limit; throws once it has passed. */
    static long remainingMs(String what) throws Timeout {
        long ms = TimeUnit.NANOSECONDS.toMillis(deadlineNanos - System.nanoTime());
        if (ms <= 0) {
            throw new Timeout(what);
        }
        return ms;
    }

    /** Acquires l within the time limit. */
    static void acquire(Locker l, String what) throws Exception {
        if (!l.acquire(remainingMs(what))) {
            throw new Timeout(what);
        }
    }

    /** Starts and connects one Curator session. */
    static CuratorFramework connect(String connect) throws Exception {
        CuratorFramework c = CuratorFrameworkFactory.builder()
                .connectString(connect)
                .sessionTimeoutMs(sessionTimeoutMs)
                .connectionTimeoutMs(15_000)
                .retryPolicy(new ExponentialBackoffRetry(100, 3))
                // Keep the address we were given (it may be a counting
                // proxy): the ensemble's own view of its client address is
                // the server itself.
                .ensembleTracker(false)
                .build();
        synchronized (sessions) {
            sessions.add(c);
        }
        c.start();
        if (!c.blockUntilConnected((int) Math.min(Integer.MAX_VALUE, remainingMs("connect")), TimeUnit.MILLISECONDS)) {
            throw new Timeout("connect to " + connect);
        }
        return c;
    }

    /** Closes c and forgets it: closeAll leaves it alone. */
    static void closeSession(CuratorFramework c) {
        synchronized (sessions) {
            sessions.remove(c);
        }
        c.close();
    }

    /** Connects n sessions, a few at a time. */
    static List<CuratorFramework> connectAll(int n, String connect) throws Exception {
        long start = System.nanoTime();
        ExecutorService pool = Executors.newFixedThreadPool(PARALLEL_CONNECTS, daemon("connect"));
        try {
            List<Future<CuratorFramework>> fs = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                fs.add(pool.submit(() -> connect(connect)));
            }
            List<CuratorFramework> cs = new ArrayList<>();
            for (Future<CuratorFramework> f : fs) {
                cs.add(f.get(remainingMs("connect"), TimeUnit.MILLISECONDS));
            }
            System.err.println("BenchCurator: connected " + n + " sessions in "
                    + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start) + "ms");
            return cs;
        } finally {
            pool.shutdownNow();
        }
    }

    /**
     * Closes every session, each on a thread of its own, and returns once
     * the server has ended them all (bounded by CLOSE_LIMIT_MS), without
     * waiting for the clients' threads to wind down. ZooKeeper's Java
     * client (3.8) ends each connection's SendThread in a block
     * synchronized on a shared enum constant that sleeps 100ms
     * (ClientCnxnSocketNIO.cleanup), so closes finish one after the other:
     * minutes for thousands of sessions. The session is over at the server
     * as soon as the closeSession reply comes, when the handle's state turns
     * CLOSED; the process exit then ends the threads.
     */
    static void closeAll() {
        long start = System.nanoTime();
        List<CuratorFramework> cs;
        synchronized (sessions) {
            cs = new ArrayList<>(sessions);
            sessions.clear();
        }
        List<ZooKeeper> handles = new ArrayList<>();
        for (CuratorFramework c : cs) {
            try {
                handles.add(c.getZookeeperClient().getZooKeeper());
            } catch (Exception e) {
                // never connected: nothing to end at the server
            }
        }
        java.util.concurrent.ThreadFactory f = daemon("close");
        for (CuratorFramework c : cs) {
            f.newThread(c::close).start();
        }
        long deadline = start + TimeUnit.MILLISECONDS.toNanos(CLOSE_LIMIT_MS);
        while (!allClosed(handles) && System.nanoTime() - deadline < 0) {
            try {
                Thread.sleep(10);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
        System.err.println("BenchCurator: " + (allClosed(handles) ? "closed " : "NOT closed ") + cs.size()
                + " sessions in " + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start) + "ms");
    }

    /** Reports whether every handle's session is over. */
    static boolean allClosed(List<ZooKeeper> handles) {
        for (ZooKeeper zk : handles) {
            if (zk.getState().isAlive()) {
                return false;
            }
        }
        return true;
    }

    static java.util.concurrent.ThreadFactory daemon(String name) {
        AtomicInteger n = new AtomicInteger();
        return r -> {
            Thread t = new Thread(r, name + "-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        };
    }

    /** Runs warm-up acquire + release pairs of l, not measured. */
    static void warm(Locker l, int n) throws Exception {
        for (int i = 0; i < n; i++) {
            acquire(l, "warm-up");
            l.release();
        }
    }

    // ---- workloads -------------------------------------------------------

    /** Raw create (ephemeral-sequential) + delete pairs on one session. */
    static Result floor(String connect, String path, int n, int warmup) throws Exception {
        CuratorFramework c = connect(connect);
        c.create().creatingParentsIfNeeded().forPath(path);
        Locker raw = new Locker() {
            String node;

            public boolean acquire(long timeoutMs) throws Exception {
                node = c.create().withMode(CreateMode.EPHEMERAL_SEQUENTIAL).forPath(path + "/lock-");
                return true;
            }

            public void release() throws Exception {
                c.delete().forPath(node);
            }
        };
        return pairs(raw, n, warmup);
    }

    /** InterProcessMutex acquire + release pairs on one session. */
    static Result uncontended(String connect, String path, int n, int warmup) throws Exception {
        CuratorFramework c = connect(connect);
        return pairs(new MutexLocker(new InterProcessMutex(c, path)), n, warmup);
    }

    /** Times n acquire + release pairs of l after warmup unmeasured ones. */
    static Result pairs(Locker l, int n, int warmup) throws Exception {
        warm(l, warmup);
        phase("ready");
        Result r = new Result();
        r.latUs = new long[n];
        long start = System.nanoTime();
        for (int i = 0; i < n; i++) {
            long t0 = System.nanoTime();
            acquire(l, "pair");
            l.release();
            r.latUs[i] = (System.nanoTime() - t0) / 1000;
        }
        r.seconds = (System.nanoTime() - start) / 1e9;
        r.ops = n;
        phase("measured");
        return r;
    }

    /**
     * c sessions loop acquire, count holders, release for ms milliseconds;
     * more than maxHolders at once is a violation.
     */
    static Result loop(String connect, String path, String warmPath, int c, long ms, int warmup,
            Recipe recipe, int maxHolders) throws Exception {
        List<CuratorFramework> cs = connectAll(c, connect);
        warm(recipe.make(cs.get(0), warmPath), warmup);
        Locker[] ls = new Locker[c];
        for (int i = 0; i < c; i++) {
            ls[i] = recipe.make(cs.get(i), path);
        }
        phase("ready");
        Result r = new Result();
        r.perSession = new long[c];
        AtomicInteger holders = new AtomicInteger();
        AtomicLong violations = new AtomicLong();
        AtomicReference<Exception> failure = new AtomicReference<>();
        CountDownLatch go = new CountDownLatch(1);
        long stopAt = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ms);
        Thread[] ts = new Thread[c];
        for (int i = 0; i < c; i++) {
            final int me = i;
            ts[i] = daemon("loop").newThread(() -> {
                try {
                    go.await();
                    while (true) {
                        acquire(ls[me], "loop");
                        long now = System.nanoTime();
                        if (holders.incrementAndGet() > maxHolders) {
                            violations.incrementAndGet();
                        }
                        holders.decrementAndGet();
                        ls[me].release();
                        if (now - stopAt >= 0) {
                            return;
                        }
                        r.perSession[me]++;
                    }
                } catch (Exception e) {
                    failure.compareAndSet(null, e);
                }
            });
            ts[i].start();
        }
        go.countDown();
        joinAll(ts);
        if (failure.get() != null) {
            throw failure.get();
        }
        r.seconds = ms / 1000.0;
        for (long n : r.perSession) {
            r.ops += n;
        }
        r.violations = violations.get();
        phase("measured");
        return r;
    }

    /** Waits for every thread, within the time limit. */
    static void joinAll(Thread[] ts) throws Exception {
        for (Thread t : ts) {
            t.join(Math.max(1, remainingMs("join")));
            if (t.isAlive()) {
                throw new Timeout("join");
            }
        }
    }

    /**
     * w sessions queue on one InterProcessMutex held by a gate session; once
     * the Go side has seen w+1 nodes it says go and the gate releases. The
     * time until all w have acquired and released is measured. This repeats
     * reps times on the same sessions, the gate taking the lock again first.
     */
    static Result handoff(String connect, String gateConnect, String path, String warmPath, int w, int warmup,
            int reps) throws Exception {
        CuratorFramework gateClient = connect(gateConnect);
        warm(new MutexLocker(new InterProcessMutex(gateClient, warmPath)), warmup);
        MutexLocker gate = new MutexLocker(new InterProcessMutex(gateClient, path));
        acquire(gate, "gate");
        List<CuratorFramework> cs = connectAll(w, connect);
        phase("ready");
        Result r = new Result();
        for (int rep = 0; rep < reps; rep++) {
            if (rep > 0) {
                acquire(gate, "gate");
            }
            r.seconds += handoffOnce(gate, cs, path);
            phase("drained");
        }
        r.ops = (long) w * reps;
        phase("measured");
        return r;
    }

    /** Queues a waiter of each session behind gate, releases it, and times until all are done. */
    static double handoffOnce(MutexLocker gate, List<CuratorFramework> cs, String path) throws Exception {
        CountDownLatch done = new CountDownLatch(cs.size());
        AtomicReference<Exception> failure = new AtomicReference<>();
        for (CuratorFramework c : cs) {
            MutexLocker l = new MutexLocker(new InterProcessMutex(c, path));
            daemon("waiter").newThread(() -> {
                try {
                    acquire(l, "waiter");
                    l.release();
                    done.countDown();
                } catch (Exception e) {
                    failure.compareAndSet(null, e);
                }
            }).start();
        }
        phase("queued");
        long start = System.nanoTime();
        gate.release();
        while (!done.await(Math.min(100, remainingMs("handoff")), TimeUnit.MILLISECONDS)) {
            if (failure.get() != null) {
                throw failure.get();
            }
        }
        return (System.nanoTime() - start) / 1e9;
    }

    /**
     * The participants of a failover run: participant i's LeaderLatch on
     * session clients[i]. Each latch's isLeader listener records when it
     * leads: the listener runs (on the thread that decided, before await()
     * wakes) as soon as the latch has seen it leads, the earliest point
     * where Curator's user learns it.
     */
    static final class Electorate {
        final String connect;
        final String path;
        final CuratorFramework[] clients;
        final LeaderLatch[] latches;
        /** {participant, System.nanoTime() when it learned it leads}. */
        final LinkedBlockingQueue<long[]> led = new LinkedBlockingQueue<>();

        Electorate(String connect, String path, List<CuratorFramework> cs) {
            this.connect = connect;
            this.path = path;
            this.clients = cs.toArray(new CuratorFramework[0]);
            this.latches = new LeaderLatch[clients.length];
        }

        /** Starts a new latch of participant i on its session. */
        void enlist(int i) throws Exception {
            LeaderLatch l = new LeaderLatch(clients[i], path);
            l.addListener(new LeaderLatchListener() {
                public void isLeader() {
                    led.add(new long[] {i, System.nanoTime()});
                }

                public void notLeader() {
                }
            });
            latches[i] = l;
            l.start();
        }

        /** Waits for the next leader, within the time limit. */
        long[] next() throws Exception {
            long[] e = led.poll(remainingMs("leader"), TimeUnit.MILLISECONDS);
            if (e == null) {
                throw new Timeout("leader");
            }
            return e;
        }

        /**
         * One failover: the leader steps down (closes its latch, or its
         * session), the next leads, the old one rejoins at the tail (a new
         * latch on its session, or on a new session). Returns {the new
         * leader, nanoseconds from just before the step-down until the new
         * leader's listener ran}. timed announces queued before and drained
         * after the timed stretch.
         */
        long[] turn(int leader, boolean close, boolean timed) throws Exception {
            if (timed) {
                phase("queued");
            }
            long start = System.nanoTime();
            if (close) {
                closeSession(clients[leader]);
            } else {
                latches[leader].close();
            }
            long[] e = next();
            if (e[0] == leader) {
                throw new IllegalStateException("participant " + leader + " leads again after stepping down");
            }
            if (timed) {
                phase("drained");
            }
            if (close) {
                clients[leader] = connect(connect);
            }
            enlist(leader);
            return new long[] {e[0], e[1] - start};
        }
    }

    /**
     * p sessions' LeaderLatches on one path; the leader steps down reps
     * times, timed, after warmReps unmeasured times, the way mode says.
     */
    static Result failover(String connect, String path, String warmPath, int p, String mode, int warmup,
            int warmReps, int reps) throws Exception {
        List<CuratorFramework> cs = connectAll(p, connect);
        warm(new LatchLocker(cs.get(0), warmPath), warmup);
        Electorate el = new Electorate(connect, path, cs);
        for (int i = 0; i < p; i++) {
            el.enlist(i);
        }
        int leader = (int) el.next()[0];
        boolean close = mode.equals("close");
        for (int i = 0; i < warmReps; i++) {
            leader = (int) el.turn(leader, close, false)[0];
        }
        phase("ready");
        Result r = new Result();
        r.latUs = new long[reps];
        for (int i = 0; i < reps; i++) {
            long[] t = el.turn(leader, close, true);
            leader = (int) t[0];
            r.latUs[i] = t[1] / 1000;
            r.seconds += t[1] / 1e9;
        }
        r.ops = reps;
        phase("measured");
        return r;
    }

    /**
     * One session's InterProcessMutex on each of n paths (path-0 ..
     * path-(n-1), whose parents the Go side created), from g threads each
     * taking every g-th (g=1: in order, on this thread): every lock is
     * acquired, then held while the memory is read, then released. The
     * acquire-all and the release-all are timed apart. The heap in use and
     * the live threads are read after System.gc() before the mutexes are
     * made and once every lock is held; the mutexes are part of what a hold
     * costs, the g holding threads (the caller's, not Curator's) are not.
     */
    static Result manyLocks(String connect, String path, String warmPath, int n, int g, int warmup)
            throws Exception {
        CuratorFramework c = connect(connect);
        warm(new MutexLocker(new InterProcessMutex(c, warmPath)), warmup);
        Locker[] ls = new Locker[n];
        long[] before = memory();
        for (int i = 0; i < n; i++) {
            ls[i] = new MutexLocker(new InterProcessMutex(c, path + "-" + i));
        }
        Holders h = new Holders(ls, g);
        phase("ready");
        Result r = new Result();
        r.seconds = h.acquireAll();
        r.ops = n;
        phase("held");
        long[] after = memory();
        phase("release");
        r.releaseSeconds = h.releaseAll();
        r.heldHeap = after[0] - before[0];
        r.heldTasks = after[1] - before[1] - h.threads.length;
        r.heapApprox = true;
        phase("measured");
        return r;
    }

    /**
     * Takes every lock of ls and later releases them, from g threads each
     * taking every g-th (g=1: on the calling thread, in order). An
     * InterProcessMutex belongs to the thread that acquired it, and only
     * that thread may release it: each thread holds its share until
     * releaseAll. The threads are started (waiting) by the constructor,
     * so that starting them is not timed.
     */
    static final class Holders {
        final Locker[] ls;
        final int g;
        final Thread[] threads;
        final CountDownLatch start = new CountDownLatch(1);
        final CountDownLatch held;
        final CountDownLatch release = new CountDownLatch(1);
        final AtomicReference<Exception> failure = new AtomicReference<>();

        Holders(Locker[] ls, int g) {
            this.ls = ls;
            this.g = g;
            threads = new Thread[g <= 1 ? 0 : Math.min(g, ls.length)];
            held = new CountDownLatch(threads.length);
            for (int w = 0; w < threads.length; w++) {
                final int first = w;
                threads[w] = daemon("holder").newThread(() -> work(first));
                threads[w].start();
            }
        }

        /** One thread's share: acquire, wait for releaseAll, release. */
        void work(int first) {
            try {
                start.await();
                for (int i = first; i < ls.length; i += g) {
                    acquire(ls[i], "acquire");
                }
            } catch (Exception e) {
                failure.compareAndSet(null, e);
                return;
            } finally {
                held.countDown();
            }
            try {
                release.await();
                for (int i = first; i < ls.length; i += g) {
                    ls[i].release();
                }
            } catch (Exception e) {
                failure.compareAndSet(null, e);
            }
        }

        /** Acquires every lock; returns the seconds it took. */
        double acquireAll() throws Exception {
            long t0 = System.nanoTime();
            if (threads.length == 0) {
                for (Locker l : ls) {
                    acquire(l, "acquire");
                }
            } else {
                start.countDown();
                while (!held.await(Math.min(100, remainingMs("acquire")), TimeUnit.MILLISECONDS)) {
                    if (failure.get() != null) {
                        break;
                    }
                }
                if (failure.get() != null) {
                    throw failure.get();
                }
            }
            return (System.nanoTime() - t0) / 1e9;
        }

        /** Releases every lock; returns the seconds it took. */
        double releaseAll() throws Exception {
            long t0 = System.nanoTime();
            if (threads.length == 0) {
                for (Locker l : ls) {
                    l.release();
                }
            } else {
                release.countDown();
                joinAll(threads);
                if (failure.get() != null) {
                    throw failure.get();
                }
            }
            return (System.nanoTime() - t0) / 1e9;
        }
    }

    /** {heap in use, live threads} after System.gc(); the heap is approximate. */
    static long[] memory() {
        Runtime rt = Runtime.getRuntime();
        for (int i = 0; i < 3; i++) {
            System.gc();
        }
        return new long[] {rt.totalMemory() - rt.freeMemory(), ManagementFactory.getThreadMXBean().getThreadCount()};
    }

    // ---- main ------------------------------------------------------------

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
            zk = org.apache.zookeeper.Version.getVersion().split("[- ]")[0];
        } catch (Throwable e) {
            zk = "unknown";
        }
        return "curator=" + curator + " zookeeper=" + zk + " java=" + System.getProperty("java.version");
    }

    static Result run(String connect, String gateConnect, String workload, String path, String warmPath,
            String[] a) throws Exception {
        switch (workload) {
            case "floor":
                return floor(connect, path, Integer.parseInt(a[0]), Integer.parseInt(a[1]));
            case "uncontended":
                return uncontended(connect, path, Integer.parseInt(a[0]), Integer.parseInt(a[1]));
            case "contended":
                return loop(connect, path, warmPath, Integer.parseInt(a[0]), Long.parseLong(a[1]),
                        Integer.parseInt(a[2]), (c, p) -> new MutexLocker(new InterProcessMutex(c, p)), 1);
            case "semaphore": {
                int leases = Integer.parseInt(a[1]);
                return loop(connect, path, warmPath, Integer.parseInt(a[0]), Long.parseLong(a[2]),
                        Integer.parseInt(a[3]), (c, p) -> new LeaseLocker(new InterProcessSemaphoreV2(c, p, leases)),
                        leases);
            }
            case "rwread":
                return loop(connect, path, warmPath, Integer.parseInt(a[0]), Long.parseLong(a[1]),
                        Integer.parseInt(a[2]),
                        (c, p) -> new MutexLocker(new InterProcessReadWriteLock(c, p).readLock()), Integer.MAX_VALUE);
            case "handoff":
                return handoff(connect, gateConnect, path, warmPath, Integer.parseInt(a[0]), Integer.parseInt(a[1]),
                        a.length > 2 ? Integer.parseInt(a[2]) : 1);
            case "manylocks":
                return manyLocks(connect, path, warmPath, Integer.parseInt(a[0]), Integer.parseInt(a[1]),
                        Integer.parseInt(a[2]));
            case "failover":
                if (!a[1].equals("resign") && !a[1].equals("close")) {
                    throw new IllegalArgumentException("failover: unknown mode " + a[1]);
                }
                return failover(connect, path, warmPath, Integer.parseInt(a[0]), a[1], Integer.parseInt(a[2]),
                        Integer.parseInt(a[3]), Integer.parseInt(a[4]));
            default:
                throw new IllegalArgumentException("unknown workload " + workload);
        }
    }

    public static void main(String[] argv) throws Exception {
        out = new OutputStreamWriter(new FileOutputStream(FileDescriptor.out), StandardCharsets.UTF_8);
        System.setOut(new PrintStream(new FileOutputStream(FileDescriptor.err), true, "UTF-8"));
        in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        if (argv.length < 7) {
            System.err.println("usage: BenchCurator <sessionTimeoutMs> <limitMs> <connect> <gateConnect>"
                    + " <workload> <path> <warmPath> <args...>");
            System.exit(2);
        }
        sessionTimeoutMs = Integer.parseInt(argv[0]);
        deadlineNanos = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(Long.parseLong(argv[1]));
        String[] rest = java.util.Arrays.copyOfRange(argv, 7, argv.length);
        emit("versions " + versions());
        Result r;
        try {
            r = run(argv[2], argv[3], argv[4], argv[5], argv[6], rest);
        } catch (Timeout e) {
            r = new Result();
            r.dnf = true;
            r.error = e.getMessage();
        } catch (Exception e) {
            e.printStackTrace();
            r = new Result();
            r.error = e.toString();
        }
        closeAll();
        emit("result " + r.json());
        System.exit(0);
    }
}

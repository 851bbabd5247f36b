package io.dlock.zookeeper;

import io.dlock.LockBackendException;
import io.dlock.spi.EntrySnapshot;
import io.dlock.spi.LockInspector;
import io.dlock.spi.LockKind;
import io.dlock.spi.LockMode;
import io.dlock.spi.LockSnapshot;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.data.Stat;
import org.jspecify.annotations.Nullable;

/**
 * The operator view of a ZooKeeper backend: reads the lock nodes as {@link LockNodes} names them
 * ({@code /<namespace>/<name>/_c_<id>-<marker><seq>}), without changing the protocol.
 *
 * <p>What ZooKeeper can show: the holding session (an entry's ephemeral owner, in hex), the host and
 * pid of the process that created the node (its data, written with the create), the fencing token
 * (the node's creation zxid), and when the entry entered the queue (its ctime; the grant itself
 * leaves no trace). Whether a session's client is still connected is not known from a node (a dead
 * client's session lives until its timeout). Sessions hold grants, not leases: no lease time is
 * left to show.
 *
 * <p>A forced release deletes the holder's node: the next waiter is granted with its own, higher,
 * zxid. A holder that is still alive is told at once: a grant held for 200 ms has a watch on its
 * own node, so the server's NodeDeleted event reaches its client in milliseconds, and a grant
 * removed before that finds its node gone when the watch is set (within about 300 ms of the
 * grant); its lease turns invalid and {@code onLost} runs, with renewal on or off. Its renewal
 * (every third of the lease time, {@link ZooKeeperLockProtocol#renew}) checks the node as well, in
 * case the event was missed.
 *
 * <p>Concurrency: reads are synchronous ZooKeeper calls on the caller's thread; a watch re-reads
 * on its own single thread, never on ZooKeeper's event thread (a synchronous call there would wait
 * for itself).
 */
final class ZooKeeperInspector implements LockInspector {
    private final ZooKeeperBackend backend;
    private final String root;

    ZooKeeperInspector(ZooKeeperBackend backend) {
        this.backend = backend;
        this.root = "/" + backend.uri.namespace();
    }

    @Override
    public ForcedReleaseNotice forcedReleaseNotice() {
        return ForcedReleaseNotice.AT_ONCE;
    }

    @Override
    public List<LockSnapshot> inspect(String namePrefix) {
        Objects.requireNonNull(namePrefix, "namePrefix");
        List<String> names;
        try {
            names = new ArrayList<>(backend.zk().getChildren(root, false));
        } catch (KeeperException.NoNodeException e) {
            return List.of();
        } catch (KeeperException e) {
            throw failed(null, e);
        } catch (InterruptedException e) {
            throw interrupted(null, e);
        }
        names.sort(Comparator.naturalOrder());
        List<LockSnapshot> out = new ArrayList<>();
        for (String name : names) {
            if (name.startsWith(namePrefix)) {
                out.addAll(read(name));
            }
        }
        return out;
    }

    private record Entry(LockNodes.Node node, Stat stat, @Nullable String host, long pid) {}

    /** The snapshots of {@code name}, one per family in use. */
    List<LockSnapshot> read(String name) {
        String parent = backend.lockPath(name);
        List<Entry> entries = new ArrayList<>();
        int maxPermits = 0;
        try {
            Stat parentStat = new Stat();
            byte[] data = backend.zk().getData(parent, false, parentStat);
            String recorded = data == null ? "" : new String(data, StandardCharsets.UTF_8);
            if (recorded.startsWith("permits=")) {
                maxPermits =
                        Integer.parseInt(recorded.substring("permits=".length()).trim());
            }
            for (String child : backend.zk().getChildren(parent, false)) {
                LockNodes.Node node = LockNodes.parse(child);
                if (node == null) {
                    continue;
                }
                Stat stat = new Stat();
                byte[] creator;
                try {
                    creator = backend.zk().getData(parent + "/" + child, false, stat);
                } catch (KeeperException.NoNodeException gone) {
                    continue; // left between the listing and the read
                }
                String[] words =
                        creator == null ? new String[0] : new String(creator, StandardCharsets.UTF_8).split(" ");
                // "dlock pid <pid> host <host>" (older clients wrote the pid alone)
                long pid = words.length >= 3 && words[1].equals("pid") ? parsePid(words[2]) : -1;
                String host = words.length >= 5 && words[3].equals("host") ? words[4] : null;
                entries.add(new Entry(node, stat, host, pid));
            }
        } catch (KeeperException.NoNodeException e) {
            return List.of();
        } catch (KeeperException | NumberFormatException e) {
            throw failed(name, e);
        } catch (InterruptedException e) {
            throw interrupted(name, e);
        }
        // Creation zxids order the queue as the sequence does, without its wrap-around.
        entries.sort(Comparator.comparingLong(e -> e.stat().getCzxid()));
        List<LockSnapshot> out = new ArrayList<>();
        for (LockKind kind : LockKind.values()) {
            List<Entry> family = entries.stream()
                    .filter(e -> kindOf(e.node().mode()) == kind)
                    .toList();
            if (!family.isEmpty()) {
                out.add(snapshot(name, parent, kind, kind == LockKind.SEMAPHORE ? maxPermits : 1, family));
            }
        }
        return out;
    }

    private static long parsePid(String s) {
        try {
            return Long.parseLong(s);
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    private static LockKind kindOf(LockMode mode) {
        return switch (mode) {
            case EXCLUSIVE -> LockKind.EXCLUSIVE;
            case READ, WRITE -> LockKind.READ_WRITE;
            case SEMAPHORE -> LockKind.SEMAPHORE;
        };
    }

    /** Decides, as the protocol does, which entries of one family hold. */
    private static LockSnapshot snapshot(String name, String parent, LockKind kind, int max, List<Entry> family) {
        List<EntrySnapshot> holders = new ArrayList<>();
        List<EntrySnapshot> waiters = new ArrayList<>();
        boolean downgradeRead = family.stream().anyMatch(e -> e.node().downgrade());
        boolean writerAhead = false;
        int permitsAhead = 0;
        for (int i = 0; i < family.size(); i++) {
            LockNodes.Node node = family.get(i).node();
            boolean holds =
                    switch (node.mode()) {
                        case EXCLUSIVE -> i == 0;
                        case WRITE -> i == 0 && !downgradeRead;
                        case READ -> node.downgrade() || !writerAhead;
                        case SEMAPHORE -> permitsAhead + node.permits() <= (max == 0 ? Integer.MAX_VALUE : max);
                    };
            writerAhead |= node.mode() == LockMode.WRITE;
            permitsAhead += node.permits();
            Stat stat = family.get(i).stat();
            EntrySnapshot e = new EntrySnapshot(
                    parent + "/" + node.name(),
                    node.mode(),
                    node.permits(),
                    Long.toHexString(stat.getEphemeralOwner()),
                    family.get(i).host(),
                    family.get(i).pid(),
                    null,
                    holds ? stat.getCzxid() : 0,
                    Instant.ofEpochMilli(stat.getCtime()),
                    null);
            (holds ? holders : waiters).add(e);
        }
        return new LockSnapshot(name, kind, max, holders, waiters);
    }

    @Override
    public List<String> forceRelease(String name, Collection<String> keys) {
        if (name.isEmpty()) {
            throw new IllegalArgumentException("a lock name is required");
        }
        String parent = backend.lockPath(name);
        for (String key : keys) {
            if (!key.startsWith(parent + "/") || LockNodes.parse(key.substring(parent.length() + 1)) == null) {
                throw new IllegalArgumentException("'" + key + "' is no entry of lock '" + name + "'");
            }
        }
        List<String> removed = new ArrayList<>();
        for (String key : keys) {
            try {
                // A node's path is never reused (its sequence only grows), so deleting it by path can
                // only remove the grant that was inspected.
                backend.zk().delete(key, -1);
                removed.add(key);
            } catch (KeeperException.NoNodeException e) {
                // already gone
            } catch (KeeperException e) {
                throw failed(name, e);
            } catch (InterruptedException e) {
                throw interrupted(name, e);
            }
        }
        return removed;
    }

    @Override
    public Watch watch(
            String name, Duration pollInterval, Consumer<List<LockSnapshot>> listener, Consumer<Throwable> onError) {
        if (name.isEmpty()) {
            throw new IllegalArgumentException("a lock name is required");
        }
        if (pollInterval.isNegative() || pollInterval.isZero()) {
            throw new IllegalArgumentException("pollInterval must be positive: " + pollInterval);
        }
        ChildWatch w = new ChildWatch(name, pollInterval, listener, onError);
        w.refresh();
        return w;
    }

    /**
     * Re-reads the lock on every change of its children (a child watch, re-armed by each read, or
     * an exists watch while the lock's node is absent), and every poll interval as a safety net for
     * a watch lost with a session.
     */
    private final class ChildWatch implements Watch, Watcher {
        private final String name;
        private final String parent;
        private final Consumer<List<LockSnapshot>> listener;
        private final Consumer<Throwable> onError;
        private final ScheduledExecutorService thread;
        private final AtomicBoolean closed = new AtomicBoolean();
        // Only the watch's thread touches this.
        private @Nullable List<String> last;

        ChildWatch(
                String name,
                Duration pollInterval,
                Consumer<List<LockSnapshot>> listener,
                Consumer<Throwable> onError) {
            this.name = name;
            this.parent = backend.lockPath(name);
            this.listener = listener;
            this.onError = onError;
            this.thread = Executors.newSingleThreadScheduledExecutor(r -> {
                Thread t = new Thread(r, "dlock-zookeeper-watch");
                t.setDaemon(true);
                return t;
            });
            thread.scheduleWithFixedDelay(
                    this::read, pollInterval.toMillis(), pollInterval.toMillis(), TimeUnit.MILLISECONDS);
        }

        void refresh() {
            try {
                thread.execute(this::read);
            } catch (RejectedExecutionException e) {
                // closed
            }
        }

        @Override
        public void process(WatchedEvent event) {
            if (event.getType() != Event.EventType.None) {
                refresh();
            }
        }

        private void read() {
            if (closed.get()) {
                return;
            }
            try {
                // Arms the watch before reading, so no change after the read goes unseen.
                if (backend.zk().exists(parent, this) != null) {
                    backend.zk().getChildren(parent, this);
                }
                List<LockSnapshot> now = ZooKeeperInspector.this.read(name);
                List<String> signature = new ArrayList<>();
                for (LockSnapshot l : now) {
                    l.holders().forEach(e -> signature.add("H " + e.key()));
                    l.waiters().forEach(e -> signature.add("W " + e.key()));
                }
                if (!signature.equals(last) && !closed.get()) {
                    last = signature;
                    listener.accept(now);
                }
            } catch (KeeperException.NoNodeException e) {
                refresh(); // deleted between exists and getChildren: arm the exists watch again
            } catch (KeeperException | RuntimeException e) {
                onError.accept(e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        @Override
        public void close() {
            if (closed.compareAndSet(false, true)) {
                thread.shutdownNow();
            }
        }
    }

    private static LockBackendException failed(@Nullable String lockName, Exception e) {
        return new LockBackendException(lockName, ZooKeeperBackend.NAME, "inspection failed: " + e, e);
    }

    private static LockBackendException interrupted(@Nullable String lockName, InterruptedException e) {
        Thread.currentThread().interrupt();
        return new LockBackendException(lockName, ZooKeeperBackend.NAME, "interrupted while reading the server", e);
    }
}

package io.dlock.spring.boot.annotation;

import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The locks this application's annotated methods hold or wait for now, as the {@code dlock}
 * actuator endpoint shows them. Only calls through the aspect are tracked: core has no public
 * listing of a client's leases.
 *
 * <p>Thread-safety: safe from any thread; a snapshot is weakly consistent (a call that starts or
 * ends during it may or may not appear).
 */
public final class ActiveLocks {
    /** Where a tracked call stands. */
    public enum State {
        /** Waiting for the lock. */
        WAITING,
        /** Holding the lock (the method runs, or a scheduled job's lock is kept for {@code lockAtLeastFor}). */
        HELD
    }

    /**
     * One tracked call.
     *
     * @param lockName the lock name
     * @param state waiting or held
     * @param fencingToken the lease's token while held, {@code -1} while waiting
     * @param since when the call started waiting or was granted (wall clock, for display)
     * @param method the annotated method, {@code Class.method}
     * @param thread the thread that called it
     */
    public record Entry(String lockName, State state, long fencingToken, Instant since, String method, String thread) {}

    private final ConcurrentHashMap<Long, Entry> entries = new ConcurrentHashMap<>();
    private final AtomicLong ids = new AtomicLong();

    long waiting(String lockName, String method) {
        long id = ids.incrementAndGet();
        entries.put(
                id,
                new Entry(
                        lockName,
                        State.WAITING,
                        -1,
                        Instant.now(),
                        method,
                        Thread.currentThread().getName()));
        return id;
    }

    void held(long id, long token) {
        entries.computeIfPresent(
                id, (k, e) -> new Entry(e.lockName(), State.HELD, token, Instant.now(), e.method(), e.thread()));
    }

    void remove(long id) {
        entries.remove(id);
    }

    /**
     * The calls holding a lock now, oldest first.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @return a snapshot
     */
    public List<Entry> held() {
        return snapshot(State.HELD);
    }

    /**
     * The calls waiting for a lock now, oldest first.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @return a snapshot
     */
    public List<Entry> waiting() {
        return snapshot(State.WAITING);
    }

    private List<Entry> snapshot(State state) {
        List<Entry> out = new ArrayList<>();
        for (Entry e : entries.values()) {
            if (e.state() == state) {
                out.add(e);
            }
        }
        out.sort(Comparator.comparing(Entry::since));
        return out;
    }
}

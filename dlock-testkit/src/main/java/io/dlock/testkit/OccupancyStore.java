package io.dlock.testkit;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * A resource that holders of a shared primitive enter and leave, and that checks on every entry the
 * rule of that primitive: for a read-write lock, readers may be inside together but a writer only
 * alone; for a semaphore, never more permits inside than it has. {@link FencedStore} checks the
 * exclusive lock (one holder, fencing tokens); this store checks what shared primitives promise.
 *
 * <p>The store refuses nothing (a reader and a writer inside at once is what it must report, not
 * prevent): every entry is taken and each one that breaks the rule counts as a violation, with the
 * first described. A holder is one client with one fencing token (one grant); entering twice
 * without leaving, or leaving without entering, is a misuse and counted as such.
 *
 * <p>Thread-safety: safe from any thread; each call is atomic and the calls are totally ordered.
 */
public final class OccupancyStore {

    /** How a holder is inside. */
    public enum Mode {
        /** A read lock: shares the resource with other readers. */
        READ,
        /** A write lock: must be alone. */
        WRITE,
        /** Semaphore permits: shares the resource while the permits inside stay within the total. */
        PERMITS
    }

    /**
     * What the store found.
     *
     * @param entries entries taken
     * @param violations entries that broke the rule (a writer not alone, a reader beside a writer,
     *     more permits than the total inside)
     * @param misuses enters of a holder already inside and leaves of a holder not inside
     * @param maxReaders the most readers inside at once
     * @param maxPermits the most permits inside at once
     * @param firstProblem the first violation or misuse, or {@code ""}
     */
    public record Report(
            long entries, long violations, long misuses, int maxReaders, int maxPermits, String firstProblem) {

        /**
         * Returns whether the rule held throughout.
         *
         * @return true when there was no violation and no misuse
         */
        public boolean safe() {
            return violations == 0 && misuses == 0;
        }
    }

    private record Holder(String client, long token) {}

    private record Inside(Mode mode, int permits) {}

    private final Object lock = new Object();
    private final int totalPermits;

    @GuardedBy("lock")
    private final Map<Holder, Inside> inside = new LinkedHashMap<>();

    @GuardedBy("lock")
    private final List<String> problems = new ArrayList<>();

    @GuardedBy("lock")
    private long entries;

    @GuardedBy("lock")
    private long violations;

    @GuardedBy("lock")
    private long misuses;

    @GuardedBy("lock")
    private int maxReaders;

    @GuardedBy("lock")
    private int maxPermits;

    private OccupancyStore(int totalPermits) {
        this.totalPermits = totalPermits;
    }

    /**
     * Creates a store for a read-write lock: any number of readers, or one writer alone.
     *
     * @return the store
     */
    public static OccupancyStore readWrite() {
        return new OccupancyStore(0);
    }

    /**
     * Creates a store for a semaphore of {@code permits} permits.
     *
     * <p>On failure: {@link IllegalArgumentException} for fewer than 1 permit; nothing created.
     *
     * @param permits the semaphore's total, at least 1
     * @return the store
     * @throws IllegalArgumentException if {@code permits < 1}
     */
    public static OccupancyStore semaphore(int permits) {
        if (permits < 1) {
            throw new IllegalArgumentException("permits must be >= 1, was " + permits);
        }
        return new OccupancyStore(permits);
    }

    /**
     * Enters the resource as {@code client} with the lease's {@code token}, reading or writing (a
     * read-write store) or with {@code permits} permits (a semaphore store), and checks the rule.
     *
     * <p>Blocking: never (a short lock). Thread-safety: safe from any thread; atomic. On failure:
     * {@link IllegalArgumentException} for a mode the store is not for or a permit count below 1
     * (then nothing is recorded); a broken rule is not an exception, it is counted and returned.
     *
     * @param client who enters
     * @param token the lease's fencing token (with the client, it names the holder)
     * @param mode {@link Mode#READ} or {@link Mode#WRITE} on a read-write store, {@link
     *     Mode#PERMITS} on a semaphore store
     * @param permits the permits held (1 for READ and WRITE)
     * @return true if the entry kept the rule
     * @throws NullPointerException if {@code client} or {@code mode} is null
     * @throws IllegalArgumentException if the mode does not fit the store or {@code permits < 1}
     */
    public boolean enter(String client, long token, Mode mode, int permits) {
        Objects.requireNonNull(client, "client");
        Objects.requireNonNull(mode, "mode");
        if ((mode == Mode.PERMITS) != (totalPermits > 0)) {
            throw new IllegalArgumentException(mode + " does not fit a " + kind() + " store");
        }
        if (permits < 1 || mode != Mode.PERMITS && permits != 1) {
            throw new IllegalArgumentException("permits must be >= 1 (1 for " + mode + "), was " + permits);
        }
        Holder h = new Holder(client, token);
        synchronized (lock) {
            entries++;
            if (inside.containsKey(h)) {
                misuses++;
                problem(h + " entered again without leaving");
                return false;
            }
            boolean ok = keepsRule(mode, permits);
            if (!ok) {
                violations++;
                problem(h + " entered as " + mode + (mode == Mode.PERMITS ? " " + permits : "") + " while inside: "
                        + inside);
            }
            inside.put(h, new Inside(mode, permits));
            int readers = 0;
            int held = 0;
            for (Inside i : inside.values()) {
                readers += i.mode() == Mode.READ ? 1 : 0;
                held += i.mode() == Mode.PERMITS ? i.permits() : 0;
            }
            maxReaders = Math.max(maxReaders, readers);
            maxPermits = Math.max(maxPermits, held);
            return ok;
        }
    }

    /**
     * Leaves the resource.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread; atomic. On failure: a holder that is
     * not inside counts as a misuse and returns false.
     *
     * @param client who leaves
     * @param token the token it entered with
     * @return true if it was inside
     * @throws NullPointerException if {@code client} is null
     */
    public boolean leave(String client, long token) {
        Objects.requireNonNull(client, "client");
        Holder h = new Holder(client, token);
        synchronized (lock) {
            if (inside.remove(h) == null) {
                misuses++;
                problem(h + " left without being inside");
                return false;
            }
            return true;
        }
    }

    @GuardedBy("lock")
    private boolean keepsRule(Mode mode, int permits) {
        if (mode == Mode.PERMITS) {
            int held = 0;
            for (Inside i : inside.values()) {
                held += i.permits();
            }
            return held + permits <= totalPermits;
        }
        for (Inside i : inside.values()) {
            if (mode == Mode.WRITE || i.mode() == Mode.WRITE) {
                return false;
            }
        }
        return true;
    }

    @GuardedBy("lock")
    private void problem(String what) {
        if (problems.isEmpty()) {
            problems.add(what);
        }
    }

    private String kind() {
        return totalPermits > 0 ? "semaphore(" + totalPermits + ")" : "read-write";
    }

    /**
     * Returns what the store found so far.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: never fails.
     *
     * @return the report
     */
    public Report report() {
        synchronized (lock) {
            return new Report(
                    entries, violations, misuses, maxReaders, maxPermits, problems.isEmpty() ? "" : problems.get(0));
        }
    }

    @Override
    public String toString() {
        synchronized (lock) {
            return "OccupancyStore[" + kind() + ", " + inside.size() + " inside, " + entries + " entries, " + violations
                    + " violations]";
        }
    }
}

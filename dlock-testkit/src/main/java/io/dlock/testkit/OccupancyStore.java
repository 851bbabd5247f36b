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
 * <p>Unfenced ({@link #readWrite()}, {@link #semaphore(int)}) the store refuses nothing (a reader
 * and a writer inside at once is what it must report, not prevent): every entry is taken and each
 * one that breaks the rule counts as a violation, with the first described. A holder is one client
 * with one fencing token (one grant); entering twice without leaving, or leaving without entering,
 * is a misuse and counted as such.
 *
 * <p>Fenced ({@link #fencedReadWrite()}, {@link #fencedSemaphore(int)}) the store also does what a
 * resource guarded by fencing tokens does, with this meaning of <em>stale</em> for shared holders:
 *
 * <ul>
 *   <li>Read-write lock (one token sequence for both sides, in grant order): a writer is stale if
 *       its token is lower than any token the store has admitted (a later grant of either side
 *       means this writer's grant had ended); a reader is stale if its token is lower than the
 *       highest <em>writer</em> token admitted (readers granted before and after one another may
 *       share). An admitted writer fences out every holder inside with a lower token; an admitted
 *       reader fences out every writer inside with a lower token.
 *   <li>Semaphore: the store cannot know which permit a newer grant reused, so it assumes the
 *       oldest: an entry that would put more than the total inside fences out the holders with the
 *       lowest tokens below its own until it fits, and is itself stale if it still does not fit
 *       (every holder left inside is newer). A holder the store fenced out may still have had a
 *       valid lease (another, newer holder was the one whose permit had lapsed): the caller sees
 *       {@link Exit#STALE} for it and judges that with what it knows of the lease.
 * </ul>
 *
 * <p>A stale entry is refused ({@link Admission#STALE}, counted in {@link Report#staleRefused()});
 * a fenced-out holder's leave is refused too ({@link Exit#STALE}). A <em>violation</em> in fenced
 * mode is an admitted entry that breaks the rule with a holder fencing could not remove (the same
 * token in two clients, or a higher token already inside); fenced-out holders are counted in
 * {@link Report#fencedOut()}, not as violations: their grant had ended. Unfenced, an entry that
 * fencing would have refused is admitted and counted in {@link Report#staleAccepted()}.
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

    /** What {@link #admit} decided. */
    public enum Admission {
        /** Inside, and the rule held. */
        ADMITTED,
        /** Inside, but the rule was broken (a violation). */
        VIOLATION,
        /** Refused: the token is stale (fenced stores only); not inside. */
        STALE,
        /** The holder was already inside (a misuse); nothing changed. */
        MISUSE
    }

    /** What {@link #exit} decided. */
    public enum Exit {
        /** Left. */
        LEFT,
        /** Refused: a newer holder had fenced this one out (its grant had ended). */
        STALE,
        /** Was not inside (a misuse). */
        NOT_INSIDE
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
     * @param staleRefused entries refused as stale plus leaves of fenced-out holders (fenced only)
     * @param fencedOut holders a newer entry fenced out while they were inside (fenced only)
     * @param staleAccepted entries admitted although fencing would have refused them (unfenced
     *     only: a fenced store refuses them)
     */
    public record Report(
            long entries,
            long violations,
            long misuses,
            int maxReaders,
            int maxPermits,
            String firstProblem,
            long staleRefused,
            long fencedOut,
            long staleAccepted) {

        /**
         * A report without fencing figures.
         *
         * @param entries entries taken
         * @param violations entries that broke the rule
         * @param misuses enters of a holder inside and leaves of a holder not inside
         * @param maxReaders the most readers inside at once
         * @param maxPermits the most permits inside at once
         * @param firstProblem the first violation or misuse, or {@code ""}
         */
        public Report(
                long entries, long violations, long misuses, int maxReaders, int maxPermits, String firstProblem) {
            this(entries, violations, misuses, maxReaders, maxPermits, firstProblem, 0, 0, 0);
        }

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
    private final boolean fenced;

    @GuardedBy("lock")
    private final java.util.Set<Holder> fencedOutHolders = new java.util.HashSet<>();

    @GuardedBy("lock")
    private long highestToken = Long.MIN_VALUE;

    @GuardedBy("lock")
    private long highestWriter = Long.MIN_VALUE;

    @GuardedBy("lock")
    private long staleRefused;

    @GuardedBy("lock")
    private long fencedOut;

    @GuardedBy("lock")
    private long staleAccepted;

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

    private OccupancyStore(int totalPermits, boolean fenced) {
        this.totalPermits = totalPermits;
        this.fenced = fenced;
    }

    /**
     * Creates a store for a read-write lock: any number of readers, or one writer alone.
     *
     * @return the store
     */
    public static OccupancyStore readWrite() {
        return new OccupancyStore(0, false);
    }

    /**
     * Creates a fenced store for a read-write lock: stale entries are refused and newer holders
     * fence out older conflicting ones (see the class description).
     *
     * @return the store
     */
    public static OccupancyStore fencedReadWrite() {
        return new OccupancyStore(0, true);
    }

    /**
     * Creates a fenced store for a semaphore of {@code permits} permits (see the class description
     * for what stale means).
     *
     * <p>On failure: {@link IllegalArgumentException} for fewer than 1 permit; nothing created.
     *
     * @param permits the semaphore's total, at least 1
     * @return the store
     * @throws IllegalArgumentException if {@code permits < 1}
     */
    public static OccupancyStore fencedSemaphore(int permits) {
        checkPermits(permits);
        return new OccupancyStore(permits, true);
    }

    private static void checkPermits(int permits) {
        if (permits < 1) {
            throw new IllegalArgumentException("permits must be >= 1, was " + permits);
        }
    }

    /**
     * Returns whether the store refuses stale tokens.
     *
     * @return true for a fenced store
     */
    public boolean isFenced() {
        return fenced;
    }

    /**
     * Returns the semaphore's total, or 0 for a read-write store.
     *
     * @return the permits
     */
    public int totalPermits() {
        return totalPermits;
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
        checkPermits(permits);
        return new OccupancyStore(permits, false);
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
        return admit(client, token, mode, permits) == Admission.ADMITTED;
    }

    /**
     * Enters as {@link #enter} does, and says how it went: admitted, admitted in breach of the rule,
     * refused as stale (fenced stores), or a misuse.
     *
     * <p>Blocking: never (a short lock). Thread-safety: safe from any thread; atomic. On failure:
     * as {@link #enter}; a stale entry changes nothing but the counters.
     *
     * @param client who enters
     * @param token the lease's fencing token
     * @param mode {@link Mode#READ} or {@link Mode#WRITE} on a read-write store, {@link
     *     Mode#PERMITS} on a semaphore store
     * @param permits the permits held (1 for READ and WRITE)
     * @return what the store decided
     * @throws NullPointerException if {@code client} or {@code mode} is null
     * @throws IllegalArgumentException if the mode does not fit the store or {@code permits < 1}
     */
    public Admission admit(String client, long token, Mode mode, int permits) {
        Objects.requireNonNull(client, "client");
        Objects.requireNonNull(mode, "mode");
        if ((mode == Mode.PERMITS) != (totalPermits > 0)) {
            throw new IllegalArgumentException(mode + " does not fit a " + kind() + " store");
        }
        if (permits < 1 || mode != Mode.PERMITS && permits != 1 || permits > Math.max(1, totalPermits)) {
            throw new IllegalArgumentException("permits must be >= 1 (1 for " + mode + ", at most the total for "
                    + Mode.PERMITS + "), was " + permits);
        }
        Holder h = new Holder(client, token);
        synchronized (lock) {
            if (inside.containsKey(h)) {
                entries++;
                misuses++;
                problem(h + " entered again without leaving");
                return Admission.MISUSE;
            }
            boolean stale = mode == Mode.WRITE
                    ? token < highestToken
                    : mode == Mode.READ ? token < highestWriter : !semaphoreFits(token, permits);
            if (stale && fenced) {
                staleRefused++;
                return Admission.STALE;
            }
            entries++;
            if (stale) {
                staleAccepted++;
            }
            if (fenced) {
                fenceOut(token, mode, permits);
            }
            highestToken = Math.max(highestToken, token);
            if (mode == Mode.WRITE) {
                highestWriter = Math.max(highestWriter, token);
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
            return ok ? Admission.ADMITTED : Admission.VIOLATION;
        }
    }

    /** Whether a semaphore entry fits once every holder with a lower token is counted out. */
    @GuardedBy("lock")
    private boolean semaphoreFits(long token, int permits) {
        int newer = 0;
        for (Map.Entry<Holder, Inside> e : inside.entrySet()) {
            if (e.getKey().token() >= token) {
                newer += e.getValue().permits();
            }
        }
        return newer + permits <= totalPermits;
    }

    /** Removes the holders a newer entry proves to have lost their grant, oldest first. */
    @GuardedBy("lock")
    private void fenceOut(long token, Mode mode, int permits) {
        List<Map.Entry<Holder, Inside>> older = new ArrayList<>();
        int held = 0;
        for (Map.Entry<Holder, Inside> e : inside.entrySet()) {
            held += e.getValue().permits();
            boolean conflicts =
                    mode == Mode.PERMITS || mode == Mode.WRITE || e.getValue().mode() == Mode.WRITE;
            if (conflicts && e.getKey().token() < token) {
                older.add(e);
            }
        }
        older.sort(java.util.Comparator.comparingLong(e -> e.getKey().token()));
        for (Map.Entry<Holder, Inside> e : older) {
            if (mode == Mode.PERMITS && held + permits <= totalPermits) {
                break;
            }
            held -= e.getValue().permits();
            inside.remove(e.getKey());
            fencedOutHolders.add(e.getKey());
            fencedOut++;
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
        return exit(client, token) == Exit.LEFT;
    }

    /**
     * Leaves, and says how it went: left, refused because a newer holder had fenced this one out,
     * or not inside (a misuse).
     *
     * <p>Blocking: never. Thread-safety: safe from any thread; atomic. On failure: never throws
     * but for a null client.
     *
     * @param client who leaves
     * @param token the token it entered with
     * @return what the store decided
     * @throws NullPointerException if {@code client} is null
     */
    public Exit exit(String client, long token) {
        Objects.requireNonNull(client, "client");
        Holder h = new Holder(client, token);
        synchronized (lock) {
            if (inside.remove(h) != null) {
                return Exit.LEFT;
            }
            if (fencedOutHolders.remove(h)) {
                staleRefused++;
                return Exit.STALE;
            }
            misuses++;
            problem(h + " left without being inside");
            return Exit.NOT_INSIDE;
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
        return (fenced ? "fenced " : "") + (totalPermits > 0 ? "semaphore(" + totalPermits + ")" : "read-write");
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
                    entries,
                    violations,
                    misuses,
                    maxReaders,
                    maxPermits,
                    problems.isEmpty() ? "" : problems.get(0),
                    staleRefused,
                    fencedOut,
                    staleAccepted);
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

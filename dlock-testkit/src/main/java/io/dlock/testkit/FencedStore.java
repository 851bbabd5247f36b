package io.dlock.testkit;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.OptionalLong;

/**
 * An in-memory resource (one {@code long} value) that lock holders read and write with their
 * fencing token, recording every access with the client, the token, the value and the time, for
 * {@link FencingChecker} to judge afterwards.
 *
 * <p>In fenced mode (the default, {@link #FencedStore()} or {@link #fenced()}) the store behaves as
 * a resource guarded by dlock should: it refuses a read or a write whose token is lower than the
 * highest token it has accepted so far. A read counts: once the next holder has read with its
 * token, a paused holder that read before the pause can no longer write its stale result, which
 * fencing only on writes would let through. Equal tokens are accepted, because one lease may read
 * and write many times. In unfenced mode ({@link #unfenced()}) every access is accepted, as a plain
 * database would, and the history shows what fencing would have refused.
 *
 * <p>Every attempt, accepted or not, is kept in memory for the life of the store (about 100 bytes
 * each): {@link #accesses()} in the order the store decided them, {@link #history()} the writes
 * only.
 *
 * <p>Thread-safety: safe from any thread; each access is atomic and the accesses are totally
 * ordered.
 */
public final class FencedStore {

    /** {@link #highestToken()} before any access was accepted. */
    public static final long NO_TOKEN = Long.MIN_VALUE;

    /** What an access did. */
    public enum Kind {
        /** Read the value. */
        READ,
        /** Replaced the value. */
        WRITE
    }

    /**
     * One access attempt.
     *
     * @param sequence the position in the store's total order, from 0
     * @param kind read or write
     * @param client who accessed
     * @param token the fencing token presented
     * @param value for a write the value written (or refused); for a read the value returned, or
     *     the current value if the read was refused
     * @param nanoTime {@link System#nanoTime()} when the store decided
     * @param accepted whether the store performed the access
     */
    public record Access(
            long sequence, Kind kind, String client, long token, long value, long nanoTime, boolean accepted) {}

    /**
     * One write attempt.
     *
     * @param client who wrote
     * @param token the fencing token presented
     * @param value the value written
     * @param nanoTime {@link System#nanoTime()} when the store decided
     * @param accepted whether the store took the write
     */
    public record Write(String client, long token, long value, long nanoTime, boolean accepted) {}

    private final Object lock = new Object();
    private final boolean fenced;
    private final long initialValue;

    @GuardedBy("lock")
    private long highestToken = NO_TOKEN;

    @GuardedBy("lock")
    private long value;

    @GuardedBy("lock")
    private long acceptedWrites;

    @GuardedBy("lock")
    private long rejectedWrites;

    @GuardedBy("lock")
    private long rejectedReads;

    @GuardedBy("lock")
    private final List<Access> accesses = new ArrayList<>();

    /**
     * Creates an empty fenced store: value 0, no token seen.
     */
    public FencedStore() {
        this(true, 0);
    }

    private FencedStore(boolean fenced, long initialValue) {
        this.fenced = fenced;
        this.initialValue = initialValue;
        synchronized (lock) {
            this.value = initialValue;
        }
    }

    /**
     * Creates an empty fenced store: value 0; stale tokens are refused.
     *
     * @return the store
     */
    public static FencedStore fenced() {
        return new FencedStore(true, 0);
    }

    /**
     * Creates an empty unfenced store: value 0; every access is accepted, and recorded.
     *
     * @return the store
     */
    public static FencedStore unfenced() {
        return new FencedStore(false, 0);
    }

    /**
     * Returns whether the store refuses stale tokens.
     *
     * @return true in fenced mode
     */
    public boolean isFenced() {
        return fenced;
    }

    /**
     * Returns the value the store started with (0).
     *
     * @return the initial value
     */
    public long initialValue() {
        return initialValue;
    }

    /**
     * Reads the value if {@code token} is not lower than the highest token accepted so far (always
     * in unfenced mode); an accepted read raises the highest token to {@code token}.
     *
     * <p>Blocking: never (a short lock). Thread-safety: safe from any thread; atomic. On failure: a
     * stale token in fenced mode returns empty, counts in {@link #rejectedReads()} and changes
     * nothing.
     *
     * @param client who reads, recorded in the history
     * @param token the fencing token from the lease
     * @return the value, or empty if the token was stale
     * @throws NullPointerException if {@code client} is null
     */
    public OptionalLong read(String client, long token) {
        Objects.requireNonNull(client, "client");
        synchronized (lock) {
            boolean ok = admit(token);
            if (!ok) {
                rejectedReads++;
            }
            record(Kind.READ, client, token, value, ok);
            return ok ? OptionalLong.of(value) : OptionalLong.empty();
        }
    }

    /**
     * Writes {@code value} if {@code token} is not lower than the highest token accepted so far
     * (always in unfenced mode).
     *
     * <p>Blocking: never (a short lock). Thread-safety: safe from any thread; atomic. On failure: a
     * stale token in fenced mode returns {@code false}, counts in {@link #rejectedWrites()} and
     * changes neither the value nor the highest token.
     *
     * @param client who writes, recorded in the history
     * @param token the fencing token from the lease
     * @param value the new value
     * @return true if accepted, false if the token was stale
     * @throws NullPointerException if {@code client} is null
     */
    public boolean write(String client, long token, long value) {
        Objects.requireNonNull(client, "client");
        synchronized (lock) {
            boolean ok = admit(token);
            if (ok) {
                this.value = value;
                acceptedWrites++;
            } else {
                rejectedWrites++;
            }
            record(Kind.WRITE, client, token, value, ok);
            return ok;
        }
    }

    @GuardedBy("lock")
    private boolean admit(long token) {
        boolean ok = !fenced || token >= highestToken;
        if (ok) {
            highestToken = Math.max(highestToken, token);
        }
        return ok;
    }

    @GuardedBy("lock")
    private void record(Kind kind, String client, long token, long value, boolean ok) {
        accesses.add(new Access(accesses.size(), kind, client, token, value, System.nanoTime(), ok));
    }

    /**
     * Returns the highest token of any accepted access so far.
     *
     * @return the token, or {@link #NO_TOKEN} before the first accepted access
     */
    public long highestToken() {
        synchronized (lock) {
            return highestToken;
        }
    }

    /**
     * Returns the value of the last accepted write.
     *
     * @return the value, the initial value (0) before the first accepted write
     */
    public long value() {
        synchronized (lock) {
            return value;
        }
    }

    /**
     * Returns how many writes were accepted.
     *
     * @return the count
     */
    public long acceptedWrites() {
        synchronized (lock) {
            return acceptedWrites;
        }
    }

    /**
     * Returns how many writes were rejected for a stale token.
     *
     * @return the count, always 0 in unfenced mode
     */
    public long rejectedWrites() {
        synchronized (lock) {
            return rejectedWrites;
        }
    }

    /**
     * Returns how many reads were rejected for a stale token.
     *
     * @return the count, always 0 in unfenced mode
     */
    public long rejectedReads() {
        synchronized (lock) {
            return rejectedReads;
        }
    }

    /**
     * Returns how many accesses (reads and writes, accepted or not) the store has decided.
     *
     * @return the count
     */
    public int accessCount() {
        synchronized (lock) {
            return accesses.size();
        }
    }

    /**
     * Returns every access attempt in the order the store decided them.
     *
     * <p>Blocking: never (copies the history under the lock). Thread-safety: safe from any thread.
     * On failure: never fails.
     *
     * @return an immutable snapshot, oldest first
     */
    public List<Access> accesses() {
        return accesses(0);
    }

    /**
     * Returns the access attempts from position {@code from} on, so a poller need not copy the
     * whole history each time.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: {@link
     * IllegalArgumentException} for a negative {@code from}.
     *
     * @param from the first {@link Access#sequence()} to return; beyond the end gives an empty list
     * @return an immutable snapshot, oldest first
     * @throws IllegalArgumentException if {@code from} is negative
     */
    public List<Access> accesses(int from) {
        if (from < 0) {
            throw new IllegalArgumentException("from must be >= 0, was " + from);
        }
        synchronized (lock) {
            return from >= accesses.size() ? List.of() : List.copyOf(accesses.subList(from, accesses.size()));
        }
    }

    /**
     * Returns every write attempt in the order the store decided them.
     *
     * @return an immutable snapshot, oldest first
     */
    public List<Write> history() {
        synchronized (lock) {
            List<Write> writes = new ArrayList<>();
            for (Access a : accesses) {
                if (a.kind() == Kind.WRITE) {
                    writes.add(new Write(a.client(), a.token(), a.value(), a.nanoTime(), a.accepted()));
                }
            }
            return List.copyOf(writes);
        }
    }

    /**
     * Judges the history so far with {@link FencingChecker}.
     *
     * <p>Blocking: never (copies the history). Thread-safety: safe from any thread. On failure:
     * never fails.
     *
     * @return the checker's report
     */
    public FencingChecker.Report check() {
        List<Access> all;
        long last;
        synchronized (lock) {
            all = List.copyOf(accesses);
            last = value;
        }
        return FencingChecker.check(all, initialValue, last);
    }

    @Override
    public String toString() {
        synchronized (lock) {
            return "FencedStore[" + (fenced ? "fenced" : "unfenced") + ", value=" + value + ", highestToken="
                    + (highestToken == NO_TOKEN ? "none" : highestToken) + ", " + accesses.size() + " accesses]";
        }
    }
}

package io.dlock.testkit;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * An in-memory resource protected by fencing tokens: it accepts a write only if its token is at
 * least the highest token accepted so far, as a storage service guarded by dlock should.
 *
 * <p>Equal tokens are accepted, because one lease may write many times. Every attempt, accepted or
 * not, is kept in {@link #history()}.
 *
 * <p>Thread-safety: safe from any thread; each write is atomic.
 */
public final class FencedStore {

    /** {@link #highestToken()} before any write was accepted. */
    public static final long NO_TOKEN = Long.MIN_VALUE;

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

    @GuardedBy("lock")
    private long highestToken = NO_TOKEN;

    @GuardedBy("lock")
    private long value;

    @GuardedBy("lock")
    private long accepted;

    @GuardedBy("lock")
    private long rejected;

    @GuardedBy("lock")
    private final List<Write> history = new ArrayList<>();

    /** Creates an empty store: value 0, no token seen. */
    public FencedStore() {}

    /**
     * Writes {@code value} if {@code token} is not lower than the highest token accepted so far.
     *
     * <p>Blocking: never (a short lock). Thread-safety: safe from any thread; atomic. On failure:
     * a stale token returns {@code false}, counts in {@link #rejectedWrites()} and changes neither
     * the value nor the highest token.
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
            boolean ok = token >= highestToken;
            if (ok) {
                highestToken = token;
                this.value = value;
                accepted++;
            } else {
                rejected++;
            }
            history.add(new Write(client, token, value, System.nanoTime(), ok));
            return ok;
        }
    }

    /**
     * Returns the highest token accepted so far.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: never fails.
     *
     * @return the token, or {@link #NO_TOKEN} before the first accepted write
     */
    public long highestToken() {
        synchronized (lock) {
            return highestToken;
        }
    }

    /**
     * Returns the value of the last accepted write.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: never fails.
     *
     * @return the value, 0 before the first accepted write
     */
    public long value() {
        synchronized (lock) {
            return value;
        }
    }

    /**
     * Returns how many writes were accepted.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: never fails.
     *
     * @return the count
     */
    public long acceptedWrites() {
        synchronized (lock) {
            return accepted;
        }
    }

    /**
     * Returns how many writes were rejected for a stale token.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: never fails.
     *
     * @return the count
     */
    public long rejectedWrites() {
        synchronized (lock) {
            return rejected;
        }
    }

    /**
     * Returns every write attempt in the order the store decided them.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: never fails.
     *
     * @return an immutable snapshot, oldest first
     */
    public List<Write> history() {
        synchronized (lock) {
            return List.copyOf(history);
        }
    }
}

package io.dlock.spi;

import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.function.Consumer;

/**
 * An operator's view of a backend's locks: what is held and by whom, a forced release of a stuck
 * grant, and a stream of changes. Optional: a backend offers it through {@link
 * LockBackend#inspector()}; the {@code dlock inspect|release|watch} commands use it.
 *
 * <p>An inspection reads the server's own records, so it sees every client's entries, not only
 * this backend's. It is a snapshot: by the time it is printed, the queue may have moved.
 *
 * <p>Thread-safety: implementations must be safe for use from any thread.
 */
public interface LockInspector {

    /**
     * Lists every lock under the backend's namespace (key prefix, table) whose name starts with
     * {@code namePrefix}, with its holders and waiters; names in ascending order, a name used as
     * several kinds once per kind. Expired entries a lease backend has not yet purged are left out.
     *
     * <p>Blocking: until the server answered, at most a few connect timeouts. Thread-safety: safe
     * from any thread. On failure: throws; nothing is changed on the server.
     *
     * @param namePrefix the start of the names to list; empty for all
     * @return the locks that have at least one holder or waiter
     * @throws io.dlock.LockBackendException if the server cannot be read
     */
    List<LockSnapshot> inspect(String namePrefix);

    /**
     * Removes granted entries of lock {@code name} by force, as if their holders had released them
     * (the next waiter is granted, with a higher fencing token than theirs). A removed holder that
     * is still alive is told as {@link #forcedReleaseNotice()} says: at once where the server can
     * notify it (its lease turns invalid and {@code onLost} runs with a {@link
     * io.dlock.LockLostException} that says the grant was released by force and names the lock
     * and the fencing token), else at its next renewal or session check. Only entries that are
     * still granted with the same key are removed, so a key read by an earlier {@link #inspect}
     * never removes a later grant.
     *
     * <p>Blocking: until the server answered, at most a few connect timeouts. Thread-safety: safe
     * from any thread. On failure: throws; entries already removed stay removed.
     *
     * @param name the lock's name
     * @param keys the {@link EntrySnapshot#key()}s of the granted entries to remove
     * @return the keys that were removed (those still granted)
     * @throws IllegalArgumentException if {@code name} is empty or a key is not one of this lock's
     * @throws io.dlock.LockBackendException if the server cannot be reached
     */
    List<String> forceRelease(String name, Collection<String> keys);

    /**
     * Whether a holder that is still alive notices a {@link #forceRelease} of its grant (its lease
     * turns invalid and its {@code onLost} listeners run, at once or at its next renewal or check;
     * {@link #forcedReleaseNotice()} says which). Where it
     * does not, it keeps acting as the holder until it closes its lease or its session ends, and
     * only fencing tokens keep the protected resource safe: callers should say so before removing.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @return true by default
     */
    default boolean holderNoticesForcedRelease() {
        return true;
    }

    /**
     * When a holder that is still alive learns of a {@link #forceRelease} of its grant, so that
     * callers can say how long it may still act as the holder while the next one already does.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @return by default {@link ForcedReleaseNotice#NEXT_RENEWAL} where {@link
     *     #holderNoticesForcedRelease()}, else {@link ForcedReleaseNotice#NOT_TOLD}
     */
    default ForcedReleaseNotice forcedReleaseNotice() {
        return holderNoticesForcedRelease() ? ForcedReleaseNotice.NEXT_RENEWAL : ForcedReleaseNotice.NOT_TOLD;
    }

    /** When a live holder learns that its grant was removed by force. Thread-safety: immutable. */
    enum ForcedReleaseNotice {
        /**
         * The server tells the holder's client (a watch, a published message, a notification):
         * its lease turns invalid within about a second, unless its connection is down then (it
         * then learns at its next renewal, as with {@link #NEXT_RENEWAL}).
         */
        AT_ONCE,
        /**
         * The holder finds its grant gone at its next renewal or session check, every third of its
         * lease time; at the latest when its lease runs out ({@link EntrySnapshot#leaseLeft()}).
         */
        NEXT_RENEWAL,
        /**
         * The holder is not told (renewal off, on a backend that cannot notify): it keeps acting as
         * the holder until it closes its lease or its session or lease ends.
         */
        NOT_TOLD
    }

    /**
     * Reports lock {@code name}'s state each time it changes, through the server's watches or
     * notifications where it has them and by reading it every {@code pollInterval} where not. The
     * first call reports the current state. Changes that come and go between two reads may be
     * missed; an empty list means nobody holds or waits.
     *
     * <p>Blocking: never; {@code listener} runs on a thread of the backend's, one call at a time.
     * Thread-safety: safe from any thread. On failure: a failed read is reported to {@code onError}
     * and tried again at the next change or interval.
     *
     * @param name the lock's name
     * @param pollInterval how often to read where the server cannot notify; positive
     * @param listener receives the lock's snapshots (one per kind in use) after each change
     * @param onError receives failures of single reads
     * @return a handle whose {@code close()} stops the watch (idempotent, never throws)
     * @throws IllegalArgumentException if {@code name} is empty or {@code pollInterval} is not
     *     positive
     */
    Watch watch(String name, Duration pollInterval, Consumer<List<LockSnapshot>> listener, Consumer<Throwable> onError);

    /**
     * Reads the data-loss fences in force under the backend's namespace now (see {@link
     * DataLossFence}), and a missing marker that the next acquire will turn into one.
     *
     * <p>Blocking: until the server answered, at most a few connect timeouts. Thread-safety: safe
     * from any thread. On failure: throws; nothing is changed on the server.
     *
     * @return the fences, empty when grants are not held back (and by default: backends that keep no
     *     fence)
     * @throws io.dlock.LockBackendException if the server cannot be read
     */
    default List<DataLossFence> fences() {
        return List.of();
    }

    /**
     * Marks a brand-new deployment as such ({@code dlock init}): writes the markers that say the
     * server's data is continuous, so that the first grants do not wait out a data-loss fence. Only
     * where nothing was ever granted: if the namespace holds any lock or marker, it refuses and
     * changes nothing. An operator runs it once, on a server that is known to be new; on a server
     * that lost its data it would defeat the fence, and nothing on the server can tell the two apart.
     *
     * <p>Blocking: until the server answered, at most a few connect timeouts per request. Thread-safety:
     * safe from any thread. On failure: throws; on a Redis Cluster, slots marked before the failure
     * stay marked (running it again refuses: mark the rest by hand or wait one lease).
     *
     * @return one line saying what was done, or that this backend needs nothing (it keeps no fence)
     * @throws IllegalStateException if the namespace was used before (the message says what was found)
     * @throws io.dlock.LockBackendException if the server cannot be reached
     */
    default String initialize() {
        return "nothing to do: this backend keeps no data-loss fence";
    }

    /** A running {@link #watch}. Thread-safety: safe from any thread. */
    interface Watch extends AutoCloseable {
        /**
         * Stops the watch; no listener call starts afterwards.
         *
         * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail;
         * idempotent.
         */
        @Override
        void close();
    }
}

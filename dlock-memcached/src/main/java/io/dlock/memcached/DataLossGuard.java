package io.dlock.memcached;

import io.dlock.memcached.MetaConnection.Command;
import io.dlock.memcached.MetaConnection.Reply;
import java.util.concurrent.ThreadLocalRandom;

/**
 * The per-server boot marker that keeps a server's data loss from letting a second holder in.
 *
 * <p>Memcached forgets everything on a restart (and on {@code flush_all}, and an item can be
 * evicted). A holder's lease is time-based: it stays valid in its client until a renewal fails, up
 * to a lease time after the data went away. So the server keeps one marker key, {@value
 * #MARKER_KEY}, recording when its current data life began. Every acquire reads the marker in the
 * same pipeline as its {@code add}; the marker's absence means the server lost its data. The first
 * client to notice writes a new marker (with {@code add}, so one writer wins) whose value carries a
 * quarantine end on the server's clock (see {@link #quarantineEnd}). Until the server's clock
 * passes that end, nobody is granted: an {@code add} that landed meanwhile is undone with an
 * owner-checked delete before the acquire reports anything.
 *
 * <p>The end, and why it is safe (docs/safety.md, "Memcached's quarantine, counted from the
 * restart"). Every lease a client holds is valid, in that client, until {@code t0 + lease -
 * margin}, where {@code t0} is its own clock just before it sent the request that the server
 * confirmed (the grant or the last renewal). A server that died at {@code C} confirmed nothing after
 * {@code C}, so every lease it confirmed is invalid by {@code C + lease}. A new process starts after
 * the crash. Memcached's clock is {@code W0 + (whole seconds of its monotonic clock since start)},
 * {@code W0} being the wall clock's second at start; {@code stats} reports it as {@code time}, and
 * {@code time - uptime = W0 - 2} (memcached dates its start two seconds early on purpose: {@code
 * process_started = time(0) - ITEM_UPDATE_INTERVAL - 2}, {@code uptime = current_time -
 * ITEM_UPDATE_INTERVAL}). A reading taken {@code e} real seconds after the start is below {@code W0
 * + e + 1} (whole seconds of a clock ticked once a second), so a reading of at least {@code W0 +
 * q + 1} comes more than {@code q} seconds after the start, hence more than {@code q} after the crash:
 * with {@code q} the longest lease in use, every lease of the old server has run out.
 *
 * <p>That bound covers leases the old server confirmed, not a loss without a restart ({@code
 * flush_all}, the marker evicted or deleted) in a life that already granted. So it is used only
 * while the current life cannot have granted yet: a grant needs a marker read that says open, and
 * every marker of a life ends at {@code W0 + q + 1} or later (both rules below end there or later,
 * since every client's {@code q} is at least every lease in use), so while the server's clock is at
 * most {@code W0 + ceil(this client's lease)} nothing has been granted in this life. Later than that,
 * the end is counted from the notice, as before: {@code now + q + 1}. The {@code stats} that gives
 * {@code time} and {@code uptime} and the {@code add} of the marker go over the same TCP connection,
 * which a restart breaks, so a marker is never dated by another life's start.
 *
 * <p>Server time without an extra round trip: the marker is stored with an absolute expiry far in
 * the future, {@code E}, written into its value; {@code mg ... t} returns the remaining seconds
 * {@code t}, so the server's clock reads {@code E - t}.
 *
 * <p>Limits (see the README): the marker has no practical expiry, but memcached may still evict it
 * under memory pressure; that only causes a needless quarantine (safe). A lock key evicted while
 * the marker survives is not detected here: its holder learns of it at its next renewal, and a new
 * holder may be granted before that; fencing tokens protect the resource then.
 *
 * <p>Kept free of backend details so that it can move to the engine for every backend that can
 * lose its data. Thread-safety: immutable.
 */
final class DataLossGuard {

    /** The marker's key: one per server, shared by every key prefix (a data loss is server-wide). */
    static final String MARKER_KEY = "dlock:epoch";

    /** How far ahead the marker's absolute expiry is set: about four years. */
    static final long MARKER_LIFETIME_SECONDS = 4L * 365 * 24 * 3600;

    /**
     * Memcached's clock ticks once a second, so a reading lags real time by up to a second: a
     * quarantine of {@code q + 1} clock seconds lasts more than {@code q} real seconds.
     */
    static final long CLOCK_SLACK_SECONDS = 1;

    /**
     * How much earlier than its real start memcached dates its start: {@code stats} gives {@code
     * time - uptime = (wall clock second at start) - 2} (memcached.c: {@code process_started =
     * time(0) - ITEM_UPDATE_INTERVAL - 2}; {@code uptime = current_time - ITEM_UPDATE_INTERVAL}).
     * Every memcached dlock supports (1.6 and later) does this; it has since 1.4.18. A server that
     * dated its start less early would only lengthen the quarantine ({@link #quarantineEnd} also
     * never puts the start after the reading itself); one that dated it more than two seconds early
     * would shorten it below what is safe: an assumption, checked against the real server by
     * {@code MemcachedFaultIT} (uptime 2 or 3 right after the start).
     */
    static final long START_DATED_EARLY_SECONDS = 2;

    /** What the marker says. */
    enum State {
        /** The marker is there and its quarantine is over: grants may be made. */
        OPEN,
        /** The marker is there and its quarantine has not ended. */
        QUARANTINED,
        /** The marker is gone: the server lost its data. */
        MISSING
    }

    /**
     * A reading of the marker.
     *
     * @param state what it says
     * @param serverSeconds the server's clock (unix seconds), or -1 when the marker is missing
     * @param quarantineEnd when the quarantine ends (unix seconds, server clock), or 0
     */
    record Verdict(State state, long serverSeconds, long quarantineEnd) {
        long secondsLeft() {
            return Math.max(0, quarantineEnd - serverSeconds);
        }
    }

    private final long quarantineSeconds;
    private final long leaseSeconds;

    /**
     * @param quarantineSeconds the longest lease in use by any client of the server, whole seconds
     *     rounded up
     * @param leaseSeconds this client's lease, whole seconds rounded up (at most {@code
     *     quarantineSeconds})
     */
    DataLossGuard(long quarantineSeconds, long leaseSeconds) {
        if (leaseSeconds > quarantineSeconds || leaseSeconds < 0) {
            throw new IllegalArgumentException(
                    "lease " + leaseSeconds + " s must be between 0 and the quarantine " + quarantineSeconds + " s");
        }
        this.quarantineSeconds = quarantineSeconds;
        this.leaseSeconds = leaseSeconds;
    }

    /** How long a quarantine lasts, slack included (seconds). */
    long quarantineSecondsWithSlack() {
        return quarantineSeconds + CLOCK_SLACK_SECONDS;
    }

    /** The command that reads the marker: its value and remaining time to live. */
    static Command read() {
        return Command.of("mg " + MARKER_KEY + " v t");
    }

    /** Judges {@link #read()}'s reply; throws IllegalStateException for a reply it cannot use. */
    static Verdict judge(Reply reply) {
        if (reply.status().equals("EN")) {
            return new Verdict(State.MISSING, -1, 0);
        }
        if (!reply.status().equals("VA") || reply.value() == null) {
            throw new IllegalStateException("unexpected reply to the boot marker read: " + reply);
        }
        String[] parts = reply.value().split(" ");
        if (parts.length != 3) {
            throw new IllegalStateException("boot marker " + MARKER_KEY + " has an unexpected value '" + reply.value()
                    + "' (written by something other than dlock?)");
        }
        long quarantineEnd = Long.parseLong(parts[1]);
        long expiresAt = Long.parseLong(parts[2]);
        long ttl = reply.flagLong('t');
        long now = expiresAt - ttl;
        return new Verdict(now >= quarantineEnd ? State.OPEN : State.QUARANTINED, now, quarantineEnd);
    }

    /**
     * When a quarantine noticed now ends, on the server's clock (see the class comment for why):
     * counted from the server's start while this life cannot have granted yet, else from now.
     *
     * @param serverSeconds {@code stats}' {@code time}
     * @param uptimeSeconds {@code stats}' {@code uptime} from the same reply
     */
    long quarantineEnd(long serverSeconds, long uptimeSeconds) {
        long start = Math.min(serverSeconds, serverSeconds - uptimeSeconds + START_DATED_EARLY_SECONDS);
        long from = uptimeSeconds >= 0 && serverSeconds - start <= leaseSeconds ? start : serverSeconds;
        return from + quarantineSeconds + CLOCK_SLACK_SECONDS;
    }

    /**
     * The marker value that starts a quarantine, given the server's clock and uptime from {@code
     * stats} on the connection the marker will be written over, with an {@code add} ({@link
     * #writeMarker} mode {@code ME}), so that of several clients noticing the loss at once only the
     * first one's marker counts (the others read it at their next attempt).
     */
    String quarantineValue(long serverSeconds, long uptimeSeconds) {
        return markerValue(quarantineEnd(serverSeconds, uptimeSeconds), serverSeconds);
    }

    /**
     * The command that marks a brand-new server ({@code dlock init}): a marker whose quarantine is
     * already over; {@code mode} is {@code ME} (only if none exists) or {@code C<cas>} (only over the
     * marker read with that CAS value).
     */
    static Command markNew(long serverSeconds, String mode) {
        return writeMarker(markerValue(serverSeconds, serverSeconds), serverSeconds, mode);
    }

    private static String markerValue(long end, long serverSeconds) {
        return Long.toHexString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE) + " " + end + " "
                + (serverSeconds + MARKER_LIFETIME_SECONDS);
    }

    /** Writes {@code value} (from {@link #markerValue}) as the marker; {@code mode} as for {@link #markNew}. */
    static Command writeMarker(String value, long serverSeconds, String mode) {
        return Command.set(MARKER_KEY, value, mode + " T" + (serverSeconds + MARKER_LIFETIME_SECONDS));
    }

    /** The server clock in a {@code stats} reply's lines. */
    static long statsTime(Reply stats) {
        return statsValue(stats, "time");
    }

    /** The server's uptime (seconds, dated {@link #START_DATED_EARLY_SECONDS} early) in a {@code stats} reply. */
    static long statsUptime(Reply stats) {
        return statsValue(stats, "uptime");
    }

    private static long statsValue(Reply stats, String name) {
        for (String line : java.util.Objects.requireNonNull(stats.value(), "stats without lines")
                .split("\n")) {
            if (line.startsWith(name + " ")) {
                return Long.parseLong(line.substring(name.length() + 1).trim());
            }
        }
        throw new IllegalStateException("memcached stats without '" + name + "'");
    }
}

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
 * quarantine end: the server's time then plus the quarantine (the longest lease time in use) plus
 * two seconds for memcached's one-second clock. Until the server's clock passes that end, nobody is
 * granted: an {@code add} that landed meanwhile is undone with an owner-checked delete before the
 * acquire reports anything.
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

    DataLossGuard(long quarantineSeconds) {
        this.quarantineSeconds = quarantineSeconds;
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
     * The command that writes a new marker, given the server's clock from {@code stats}: an
     * {@code add}, so that of several clients noticing the loss at once only the first one's marker
     * counts (the others read it at their next attempt).
     */
    Command startQuarantine(long serverSeconds) {
        long end = serverSeconds + quarantineSeconds + CLOCK_SLACK_SECONDS;
        long expiresAt = serverSeconds + MARKER_LIFETIME_SECONDS;
        String value =
                Long.toHexString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE) + " " + end + " " + expiresAt;
        return Command.withData("ms " + MARKER_KEY + " " + value.length() + " ME T" + expiresAt, value);
    }

    /** The server clock in a {@code stats} reply's lines. */
    static long statsTime(Reply stats) {
        for (String line : java.util.Objects.requireNonNull(stats.value(), "stats without lines")
                .split("\n")) {
            if (line.startsWith("time ")) {
                return Long.parseLong(line.substring(5).trim());
            }
        }
        throw new IllegalStateException("memcached stats without 'time'");
    }
}

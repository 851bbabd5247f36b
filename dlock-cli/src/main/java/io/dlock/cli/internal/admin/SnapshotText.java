package io.dlock.cli.internal.admin;

import io.dlock.core.LockNames;
import io.dlock.spi.EntrySnapshot;
import io.dlock.spi.LockKind;
import io.dlock.spi.LockSnapshot;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.jspecify.annotations.Nullable;

/**
 * Renders snapshots as a table for people and as JSON for scripts.
 *
 * <p>Thread-safety: stateless.
 */
public final class SnapshotText {
    private SnapshotText() {}

    private static final String[] HEADER = {
        "LOCK", "KIND", "STATE", "MODE", "PERMITS", "CLIENT", "HOST", "PID", "CONNECTED", "TOKEN", "FOR", "LEASE LEFT"
    };

    /**
     * A table with one line per holder and waiter, holders first, waiters in queue order.
     *
     * @param locks the snapshots
     * @param now the time "held for" is counted to
     * @return the lines, without a trailing newline
     */
    public static String table(List<LockSnapshot> locks, Instant now) {
        List<String[]> rows = new ArrayList<>();
        rows.add(HEADER);
        for (LockSnapshot l : locks) {
            String kind = kind(l);
            boolean election = isElection(l);
            for (EntrySnapshot e : l.holders()) {
                rows.add(row(l.name(), kind, election ? "leader" : "held", e, now));
            }
            int n = 1;
            for (EntrySnapshot e : l.waiters()) {
                rows.add(row(l.name(), kind, (election ? "candidate #" : "waiting #") + n++, e, now));
            }
        }
        int[] width = new int[HEADER.length];
        for (String[] r : rows) {
            for (int i = 0; i < r.length; i++) {
                width[i] = Math.max(width[i], r[i].length());
            }
        }
        StringBuilder b = new StringBuilder();
        for (String[] r : rows) {
            StringBuilder line = new StringBuilder();
            for (int i = 0; i < r.length; i++) {
                line.append(String.format(Locale.ROOT, "%-" + width[i] + "s", r[i]));
                if (i < r.length - 1) {
                    line.append("  ");
                }
            }
            b.append(line.toString().stripTrailing()).append('\n');
        }
        return b.toString().stripTrailing();
    }

    /**
     * Whether the snapshot is a leader election's lock ({@link LockNames#ELECTION_PREFIX}): its
     * holder is the leader, its token the term, its waiters the candidates in line.
     *
     * @param l a snapshot
     * @return true for an election
     */
    public static boolean isElection(LockSnapshot l) {
        return l.kind() == LockKind.EXCLUSIVE && l.name().startsWith(LockNames.ELECTION_PREFIX);
    }

    private static String kind(LockSnapshot l) {
        if (isElection(l)) {
            return "election";
        }
        return switch (l.kind()) {
            case EXCLUSIVE -> "lock";
            case READ_WRITE -> "read-write";
            case SEMAPHORE -> "semaphore/" + (l.maxPermits() == 0 ? "?" : l.maxPermits());
        };
    }

    private static String[] row(String name, String kind, String state, EntrySnapshot e, Instant now) {
        return new String[] {
            name,
            kind,
            state,
            e.mode().name().toLowerCase(Locale.ROOT),
            Integer.toString(e.permits()),
            or(e.clientId()),
            or(e.host()),
            e.pid() < 0 ? "-" : Long.toString(e.pid()),
            e.connected() == null ? "?" : e.connected() ? "yes" : "NO",
            e.backendToken() == 0 ? "-" : Long.toString(e.leaseToken()),
            e.since() == null ? "?" : duration(Duration.between(e.since(), now)),
            e.leaseLeft() == null ? "-" : duration(e.leaseLeft())
        };
    }

    private static String or(@Nullable String s) {
        return s == null ? "-" : s;
    }

    /** A short duration: {@code 850ms}, {@code 12.3s}, {@code 4m05s}, {@code 2h10m}. */
    public static String duration(Duration d) {
        long ms = Math.max(0, d.toMillis());
        if (ms < 1000) {
            return ms + "ms";
        }
        if (ms < 60_000) {
            return String.format(Locale.ROOT, "%.1fs", ms / 1000.0);
        }
        long s = ms / 1000;
        if (s < 3600) {
            return String.format(Locale.ROOT, "%dm%02ds", s / 60, s % 60);
        }
        return String.format(Locale.ROOT, "%dh%02dm", s / 3600, s / 60 % 60);
    }

    /**
     * The snapshots as a JSON array of objects ({@code name}, {@code kind} ({@code exclusive},
     * {@code read-write}, {@code semaphore}, or {@code election} for an election's lock), {@code maxPermits},
     * {@code holders}, {@code waiters}); entries carry {@code key}, {@code mode}, {@code permits},
     * {@code clientId}, {@code host}, {@code pid}, {@code connected}, {@code token} (the lease's),
     * {@code backendToken}, {@code since} (ISO-8601), {@code heldForMs} and {@code leaseLeftMs}, null
     * where unknown.
     *
     * @param locks the snapshots
     * @param now the time {@code heldForMs} is counted to
     * @return one line of JSON
     */
    public static String json(List<LockSnapshot> locks, Instant now) {
        StringBuilder b = new StringBuilder("[");
        for (int i = 0; i < locks.size(); i++) {
            LockSnapshot l = locks.get(i);
            b.append(i == 0 ? "" : ",")
                    .append("{\"name\":")
                    .append(quote(l.name()))
                    .append(",\"kind\":")
                    .append(quote(isElection(l) ? "election" : kindName(l.kind())))
                    .append(",\"maxPermits\":")
                    .append(l.maxPermits())
                    .append(",\"holders\":");
            entries(b, l.holders(), now);
            b.append(",\"waiters\":");
            entries(b, l.waiters(), now);
            b.append('}');
        }
        return b.append(']').toString();
    }

    private static String kindName(LockKind kind) {
        return kind.name().toLowerCase(Locale.ROOT).replace('_', '-');
    }

    private static void entries(StringBuilder b, List<EntrySnapshot> entries, Instant now) {
        b.append('[');
        for (int i = 0; i < entries.size(); i++) {
            EntrySnapshot e = entries.get(i);
            b.append(i == 0 ? "" : ",")
                    .append("{\"key\":")
                    .append(quote(e.key()))
                    .append(",\"mode\":")
                    .append(quote(e.mode().name().toLowerCase(Locale.ROOT)))
                    .append(",\"permits\":")
                    .append(e.permits())
                    .append(",\"clientId\":")
                    .append(quote(e.clientId()))
                    .append(",\"host\":")
                    .append(quote(e.host()))
                    .append(",\"pid\":")
                    .append(e.pid() < 0 ? "null" : Long.toString(e.pid()))
                    .append(",\"connected\":")
                    .append(e.connected())
                    .append(",\"token\":")
                    .append(e.backendToken() == 0 ? "null" : Long.toString(e.leaseToken()))
                    .append(",\"backendToken\":")
                    .append(e.backendToken() == 0 ? "null" : Long.toString(e.backendToken()))
                    .append(",\"since\":")
                    .append(quote(e.since() == null ? null : e.since().toString()))
                    .append(",\"heldForMs\":")
                    .append(
                            e.since() == null
                                    ? "null"
                                    : Long.toString(
                                            Duration.between(e.since(), now).toMillis()))
                    .append(",\"leaseLeftMs\":")
                    .append(
                            e.leaseLeft() == null
                                    ? "null"
                                    : Long.toString(e.leaseLeft().toMillis()))
                    .append('}');
        }
        b.append(']');
    }

    /** A JSON string literal, or {@code null}. */
    static String quote(@Nullable String s) {
        if (s == null) {
            return "null";
        }
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            switch (c) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                case '\n' -> b.append("\\n");
                case '\r' -> b.append("\\r");
                case '\t' -> b.append("\\t");
                default -> {
                    if (c < 0x20) {
                        b.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
                }
            }
        }
        return b.append('"').toString();
    }
}

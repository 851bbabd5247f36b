package io.dlock.cli.internal.admin;

import io.dlock.spi.EntrySnapshot;
import io.dlock.spi.LockSnapshot;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * Turns consecutive snapshots of one lock into events, in the order they must have happened:
 * grants that ended ({@code released}, or {@code expired} where the lease had run out), then new
 * grants, then waiters that left the queue without a grant, then new waiters. A leader election's
 * lock speaks of terms: {@code leads}, {@code elected}, {@code term ended}, {@code term expired},
 * {@code candidate joined #n}, {@code candidate left}.
 *
 * <p>A grant is called {@code expired} only when the lease time left that was last read for it had
 * run out by the time it was seen gone. Watches driven by server notifications see no renewals, so
 * the caller refreshes lease times with {@link #refresh} between changes; without it, every grant
 * held longer than one lease time would look expired when it is released.
 *
 * <p>Thread-safety: not thread-safe; callers serialize {@link #next} and {@link #refresh}.
 */
public final class WatchEvents {
    private Map<String, EntrySnapshot> holders = new LinkedHashMap<>();
    private Map<String, EntrySnapshot> waiters = new LinkedHashMap<>();
    private Map<String, String> kinds = new LinkedHashMap<>();
    private Map<String, Long> holderReadAt = new LinkedHashMap<>();
    private boolean first = true;
    /** Whether the watched name is a leader election's lock: events then speak of terms. */
    private boolean election;

    /**
     * The events between the previous snapshot and {@code now}; the first call describes the state
     * it finds ({@code holds}, {@code waits}).
     *
     * @param now the lock's snapshots, one per kind in use
     * @param nanoTime when they were read ({@link System#nanoTime()})
     * @return one line per event, without a time stamp
     */
    public List<String> next(List<LockSnapshot> now, long nanoTime) {
        Map<String, EntrySnapshot> h = new LinkedHashMap<>();
        Map<String, EntrySnapshot> w = new LinkedHashMap<>();
        Map<String, String> k = new LinkedHashMap<>();
        for (LockSnapshot l : now) {
            election |= SnapshotText.isElection(l);
            String kind = SnapshotText.isElection(l)
                    ? "election"
                    : l.kind().name().toLowerCase(Locale.ROOT).replace('_', '-');
            l.holders().forEach(e -> {
                h.put(e.key(), e);
                k.put(e.key(), kind);
            });
            l.waiters().forEach(e -> {
                w.put(e.key(), e);
                k.put(e.key(), kind);
            });
        }
        List<String> out = new ArrayList<>();
        if (first) {
            h.values().forEach(e -> out.add(line(word("holds"), k, e)));
            w.values().forEach(e -> out.add(line(word("waits"), k, e)));
            if (h.isEmpty() && w.isEmpty()) {
                out.add("free (nobody holds or waits)");
            }
        } else {
            for (EntrySnapshot e : holders.values()) {
                if (!h.containsKey(e.key())) {
                    Duration sinceRead = Duration.ofNanos(nanoTime - holderReadAt.getOrDefault(e.key(), nanoTime));
                    boolean ranOut = e.leaseLeft() != null && e.leaseLeft().compareTo(sinceRead) <= 0;
                    out.add(line(word(ranOut ? "expired" : "released"), kinds, e));
                }
            }
            for (EntrySnapshot e : h.values()) {
                if (!holders.containsKey(e.key())) {
                    out.add(line(word("granted"), k, e));
                }
            }
            for (EntrySnapshot e : waiters.values()) {
                if (!w.containsKey(e.key()) && !h.containsKey(e.key())) {
                    out.add(line(word("left queue"), kinds, e));
                }
            }
            List<String> queue = new ArrayList<>(w.keySet());
            for (EntrySnapshot e : w.values()) {
                if (!waiters.containsKey(e.key())) {
                    out.add(line(word("queued") + " #" + (queue.indexOf(e.key()) + 1), k, e));
                }
            }
        }
        first = false;
        holders = h;
        waiters = w;
        kinds = k;
        Map<String, Long> readAt = new LinkedHashMap<>();
        h.keySet().forEach(key -> readAt.put(key, nanoTime));
        holderReadAt = readAt;
        return out;
    }

    /**
     * Takes the lease times left of grants that are still known from a read made outside the
     * watch; reports nothing, since a read that raced the watch's own may be older than its latest
     * change. Grants, waiters and entries that are new to this object are ignored.
     *
     * @param now the lock's snapshots, read by the caller
     * @param nanoTime when the read answered ({@link System#nanoTime()})
     */
    public void refresh(List<LockSnapshot> now, long nanoTime) {
        for (LockSnapshot l : now) {
            for (EntrySnapshot e : l.holders()) {
                Long readAt = holderReadAt.get(e.key());
                if (readAt != null && readAt - nanoTime < 0 && holders.containsKey(e.key())) {
                    holders.put(e.key(), e);
                    holderReadAt.put(e.key(), nanoTime);
                }
            }
        }
    }

    /** A lock's event word, or an election's: the holder leads, the token is the term. */
    private String word(String lockWord) {
        if (!election) {
            return lockWord;
        }
        return switch (lockWord) {
            case "holds" -> "leads";
            case "waits" -> "candidate";
            case "released" -> "term ended";
            case "expired" -> "term expired";
            case "granted" -> "elected";
            case "left queue" -> "candidate left";
            case "queued" -> "candidate joined";
            default -> lockWord;
        };
    }

    private static String line(String what, Map<String, String> kinds, EntrySnapshot e) {
        StringBuilder b = new StringBuilder(what);
        b.append("  ")
                .append(kinds.get(e.key()))
                .append(' ')
                .append(e.mode().name().toLowerCase(Locale.ROOT));
        if (e.permits() != 1) {
            b.append(" permits=").append(e.permits());
        }
        b.append(" client=").append(or(e.clientId()));
        if (e.host() != null) {
            b.append(" host=").append(e.host());
        }
        if (e.pid() >= 0) {
            b.append(" pid=").append(e.pid());
        }
        if (e.backendToken() != 0) {
            b.append(" token=").append(e.leaseToken());
        }
        return b.append(" entry=").append(e.key()).toString();
    }

    private static String or(@Nullable String s) {
        return s == null ? "?" : s;
    }
}

package io.dlock.jdbc;

import io.dlock.spi.LockMode;
import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * Who may hold a read-write lock or a semaphore: the rules, decided on the queue's rows. The same
 * rules as the Redis and ZooKeeper backends: every granted entry counts against a request wherever
 * it stands (so safety never depends on queue order), and with fairness also every entry ahead of
 * it. A read is blocked only by writers; a write by anyone; a semaphore request by the permits of
 * the others plus its own exceeding the total. A read under the same thread's own granted write
 * (a downgrade) is not blocked by that write, nor by entries queued behind it.
 *
 * <p>Data model (the waiters table; see {@link JdbcStatements}): one row per entry, holders
 * ({@code token > 0}) and waiters ({@code token = 0}) of lock {@code N} under the name {@code
 * rw/N} (read-write) or {@code s/N} (semaphore), in arrival order ({@code seq}), each with its own
 * expiry (the holder's lease, or the waiter's). Names of exclusive locks cannot contain {@code /},
 * so the families never meet. The lock table's row of that name only counts the fencing tokens.
 *
 * <p>Why a transaction here, not one statement as for exclusive locks: the decision reads every
 * entry of the name, not one row, and in READ COMMITTED a statement that waited for a row lock does
 * not see what the winner wrote to other rows. So a grant locks the name's counter row first
 * ({@code SELECT … FOR UPDATE}), which serializes every grant and release of that name; each
 * later statement of the transaction reads what the previous holder of that row lock committed.
 * Expiry is judged in one place only, by the purge ({@code DELETE … WHERE expires_ms < now}, database
 * clock), which row-locks what it deletes: a renewal racing with it either lands first (the row
 * lives on) or finds the row gone (the lease is lost). Every row the purge left counts as live.
 *
 * <p>Thread-safety: stateless.
 */
final class SharedQueue {
    private SharedQueue() {}

    /**
     * One entry of a shared queue.
     *
     * @param remainingMs the milliseconds left of its lease or waiter lease (database clock)
     */
    record Entry(
            String acquisition,
            String client,
            char kind,
            int permits,
            int maxPermits,
            long token,
            long seq,
            long remainingMs) {
        boolean granted() {
            return token > 0;
        }

        Entry grantedWith(long newToken) {
            return new Entry(acquisition, client, kind, permits, maxPermits, newToken, seq, remainingMs);
        }
    }

    /** What a request asks for, besides its acquisition id. */
    record Request(String key, char kind, int permits, int maxPermits, @Nullable String despite) {}

    /** The queue row's kind of a mode. */
    static char kind(LockMode mode) {
        return switch (mode) {
            case EXCLUSIVE -> 'X';
            case READ -> 'R';
            case WRITE -> 'W';
            case SEMAPHORE -> 'S';
        };
    }

    /** The name the family's rows (and its token counter) carry for lock {@code name}. */
    static String key(LockMode mode, String name) {
        return switch (mode) {
            case READ, WRITE -> "rw/" + name;
            case SEMAPHORE -> "s/" + name;
            case EXCLUSIVE -> throw new IllegalArgumentException("exclusive locks have no shared queue");
        };
    }

    /** Whether an entry key (from {@link io.dlock.spi.QueueEntry#key()}) is a shared queue's. */
    static boolean isShared(String entryKey) {
        return entryKey.startsWith("rw/") || entryKey.startsWith("s/");
    }

    /** The family name of a shared entry key ({@code rw/N#acquisition} → {@code rw/N}). */
    static String keyOf(String entryKey) {
        return entryKey.substring(0, entryKey.lastIndexOf('#'));
    }

    /** The acquisition id in an entry key, or null. */
    static @Nullable String acquisitionOf(@Nullable String entryKey) {
        if (entryKey == null) {
            return null;
        }
        int hash = entryKey.lastIndexOf('#');
        return hash < 0 ? entryKey : entryKey.substring(hash + 1);
    }

    static @Nullable Entry find(List<Entry> queue, @Nullable String acquisition) {
        for (Entry e : queue) {
            if (e.acquisition().equals(acquisition)) {
                return e;
            }
        }
        return null;
    }

    /**
     * Whether {@code acquisition} may be granted {@code r} now, given {@code queue} (its own entry
     * may be in it, or not yet: then it stands last).
     */
    static boolean fits(List<Entry> queue, String acquisition, Request r, boolean fair) {
        Entry own = find(queue, acquisition);
        long mySeq = own == null ? Long.MAX_VALUE : own.seq();
        boolean downgrade = false;
        String despite = r.despite();
        if (r.kind() == 'R' && despite != null) {
            Entry write = find(queue, despite);
            downgrade = write != null && write.granted();
        }
        long used = 0;
        for (Entry e : queue) {
            if (e.acquisition().equals(acquisition)) {
                continue;
            }
            boolean ahead = fair && e.seq() < mySeq && !downgrade;
            if (!e.granted() && !ahead) {
                continue;
            }
            if (r.kind() == 'S') {
                used += e.permits();
            } else if (r.kind() != 'R' || (e.kind() == 'W' && !e.acquisition().equals(r.despite()))) {
                return false;
            }
        }
        return r.kind() != 'S' || used + r.permits() <= r.maxPermits();
    }

    /**
     * The waiting entries that may be granted now, in queue order: the ones to wake. Fair: up to
     * the first that may not (nobody overtakes it); unfair: every one that fits. Advisory: the woken
     * entry's own grant decides.
     */
    static List<Entry> grantable(List<Entry> queue, boolean fair) {
        long readers = 0;
        long writers = 0;
        long permits = 0;
        int max = 0;
        for (Entry e : queue) {
            max = Math.max(max, e.maxPermits());
            if (e.granted()) {
                switch (e.kind()) {
                    case 'R' -> readers++;
                    case 'W' -> writers++;
                    default -> permits += e.permits();
                }
            }
        }
        List<Entry> out = new ArrayList<>();
        for (Entry e : queue) {
            if (e.granted()) {
                continue;
            }
            boolean ok =
                    switch (e.kind()) {
                        case 'R' -> writers == 0;
                        case 'W' -> readers == 0 && writers == 0;
                        default -> permits + e.permits() <= max;
                    };
            if (ok) {
                out.add(e);
                switch (e.kind()) {
                    case 'R' -> readers++;
                    case 'W' -> writers++;
                    default -> permits += e.permits();
                }
            } else if (fair) {
                break;
            }
        }
        return out;
    }

    /** The entries whose lease has not run out (remaining ≥ 0), as the poller judges them. */
    static List<Entry> live(List<Entry> queue) {
        List<Entry> out = new ArrayList<>(queue.size());
        for (Entry e : queue) {
            if (e.remainingMs() >= 0) {
                out.add(e);
            }
        }
        return out;
    }

    /** The soonest a granted entry's lease runs out, in ms; {@code Long.MAX_VALUE} if none is granted. */
    static long soonestExpiry(List<Entry> queue) {
        long soonest = Long.MAX_VALUE;
        for (Entry e : queue) {
            if (e.granted()) {
                soonest = Math.min(soonest, e.remainingMs());
            }
        }
        return soonest;
    }
}

package io.dlock.core;

import io.dlock.spi.LockMode;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;

/**
 * A client's acquisitions by lock name: every live one (waiting or holding; a lost grant leaves)
 * and every grant registered to its owner thread (a lost one stays until its holds are closed).
 *
 * <p>Why one map: a held lock used to cost a node in a set of live acquisitions, a node in a map of
 * thread holds and that map's key record (88 B, W4). Here it costs one node, keyed by the lock name
 * string the acquisition already keeps. A name's value is the acquisition itself, or, when several of
 * this client's acquisitions share the name (waiters, readers, a lost grant and its successor), an
 * array of them.
 *
 * <p>Concurrency: every change to a name's value, and to the {@link Acquisition#registered} flags of
 * its acquisitions, runs inside {@link ConcurrentHashMap#compute} for that name, which excludes
 * other changes of the same name. Values are never changed after they are published (arrays are
 * copied), so readers ({@link #heldBy}, {@link #live}) need no lock; they read the flags, which are
 * volatile, and may see a change an instant late, as they could with the maps before.
 */
final class Registry {
    /** Live: waiting or holding (lost and ended ones are not). */
    static final int LIVE = 1;
    /** Registered to its owner thread as that thread's grant of its name and mode. */
    static final int HOLD = 2;
    /**
     * The lone carrier of its name's JVM-local queue ({@link LocalQueues}): it stands in the backend
     * for this client and no {@link LocalQueues.Queue} has been made for the name. A flag here
     * rather than an entry in a map of its own: a held lock costs one map node, not two (W4).
     */
    static final int CARRIER = 4;

    /** {@link #claimCarrier}: {@code a} is now the name's lone carrier. */
    static final int CLAIMED = 0;
    /** {@link #claimCarrier}: the name has a local queue (made now, or found): use it. */
    static final int QUEUED = 1;

    private final ConcurrentHashMap<String, Object> byName = new ConcurrentHashMap<>();
    private final AtomicInteger liveCount = new AtomicInteger();

    /**
     * Sets {@code flag} on {@code a}. A HOLD replaces the HOLD of any other acquisition of the same
     * name, mode and owner thread (as a map keyed by them would).
     */
    void add(Acquisition a, int flag) {
        byName.compute(a.name, (n, v) -> {
            Object value = v;
            if (flag == HOLD) {
                if (v instanceof Acquisition b) {
                    value = replacedHold(value, a, b);
                } else if (v instanceof Acquisition[] all) {
                    for (Acquisition b : all) {
                        value = replacedHold(value, a, b);
                    }
                }
            }
            int before = a.registered;
            if ((before & flag) != 0) {
                return value;
            }
            a.registered = before | flag;
            if (flag == LIVE) {
                liveCount.incrementAndGet();
            }
            return before != 0 ? value : with(value, a);
        });
    }

    /**
     * Makes {@code a} its name's lone carrier, unless the name has one already or a local queue. All
     * inside the name's compute, so that it is atomic against another arrival and against the lone
     * carrier's {@link #dropCarrier}: a lone carrier found here gives its flag up to {@code
     * makeQueue}, which publishes the name's queue with it as carrier before the flag is cleared (a
     * carrier that then finds its flag gone finds the queue).
     *
     * @param hasQueue whether the name has a local queue now
     * @return {@link #CLAIMED} or {@link #QUEUED}
     */
    int claimCarrier(
            Acquisition a,
            java.util.function.BooleanSupplier hasQueue,
            java.util.function.Consumer<Acquisition> makeQueue) {
        int[] outcome = {QUEUED};
        byName.compute(a.name, (n, v) -> {
            if (hasQueue.getAsBoolean()) {
                return v;
            }
            Acquisition carrier = null;
            if (v instanceof Acquisition b) {
                carrier = (b.registered & CARRIER) != 0 ? b : null;
            } else if (v instanceof Acquisition[] all) {
                for (Acquisition b : all) {
                    if ((b.registered & CARRIER) != 0) {
                        carrier = b;
                    }
                }
            }
            if (carrier != null) {
                makeQueue.accept(carrier);
                return clear(v, carrier, CARRIER);
            }
            outcome[0] = CLAIMED;
            int before = a.registered;
            a.registered = before | CARRIER;
            return before != 0 ? v : with(v, a);
        });
        return outcome[0];
    }

    /** Clears {@code a}'s {@link #CARRIER} flag; false if it had none (it is no lone carrier now). */
    boolean dropCarrier(Acquisition a) {
        if ((a.registered & CARRIER) == 0) {
            return false; // cleared, if ever set, only after its queue was published
        }
        boolean[] dropped = {false};
        byName.computeIfPresent(a.name, (n, v) -> {
            dropped[0] = (a.registered & CARRIER) != 0;
            return clear(v, a, CARRIER);
        });
        return dropped[0];
    }

    /** How many lone carriers there are (tests). */
    int carriers() {
        int n = 0;
        for (Object v : byName.values()) {
            for (Acquisition a : members(v)) {
                n += (a.registered & CARRIER) != 0 ? 1 : 0;
            }
        }
        return n;
    }

    /** Clears {@code flags} of {@code a}; it leaves the registry once it has none. */
    void remove(Acquisition a, int flags) {
        if ((a.registered & flags) == 0) {
            return; // a plain read first: most calls find nothing to do (the flag only goes in compute)
        }
        byName.computeIfPresent(a.name, (n, v) -> clear(v, a, flags));
    }

    /** The grant registered to {@code thread} for this name and mode, or null. */
    @Nullable
    Acquisition heldBy(String name, LockMode mode, Thread thread) {
        Object v = byName.get(name);
        if (v instanceof Acquisition a) {
            return (a.registered & HOLD) != 0 && a.mode == mode && a.owner == thread ? a : null;
        }
        if (v instanceof Acquisition[] all) {
            for (Acquisition a : all) {
                if ((a.registered & HOLD) != 0 && a.mode == mode && a.owner == thread) {
                    return a;
                }
            }
        }
        return null;
    }

    /** A snapshot of the live acquisitions. */
    List<Acquisition> live() {
        List<Acquisition> out = new ArrayList<>();
        for (Object v : byName.values()) {
            for (Acquisition a : members(v)) {
                if ((a.registered & LIVE) != 0) {
                    out.add(a);
                }
            }
        }
        return out;
    }

    /** How many live acquisitions pass {@code test}; reads them all, copies nothing. */
    int countLive(java.util.function.Predicate<Acquisition> test) {
        int n = 0;
        for (Object v : byName.values()) {
            if (v instanceof Acquisition a) {
                n += (a.registered & LIVE) != 0 && test.test(a) ? 1 : 0;
            } else if (v instanceof Acquisition[] all) {
                for (Acquisition a : all) {
                    n += (a.registered & LIVE) != 0 && test.test(a) ? 1 : 0;
                }
            }
        }
        return n;
    }

    /** Runs {@code action} on each live acquisition; reads them all, copies nothing. */
    void forEachLive(java.util.function.Consumer<Acquisition> action) {
        for (Object v : byName.values()) {
            if (v instanceof Acquisition a) {
                if ((a.registered & LIVE) != 0) {
                    action.accept(a);
                }
            } else if (v instanceof Acquisition[] all) {
                for (Acquisition a : all) {
                    if ((a.registered & LIVE) != 0) {
                        action.accept(a);
                    }
                }
            }
        }
    }

    /** Runs {@code action} on each live acquisition of {@code name}; copies nothing. */
    void forEachLive(String name, java.util.function.Consumer<Acquisition> action) {
        for (Acquisition a : members(byName.get(name))) {
            if ((a.registered & LIVE) != 0) {
                action.accept(a);
            }
        }
    }

    int liveCount() {
        return liveCount.get();
    }

    /** Clears the HOLD of {@code b} if {@code a}'s takes its place; returns the name's new value. */
    private @Nullable Object replacedHold(@Nullable Object value, Acquisition a, Acquisition b) {
        return b != a && (b.registered & HOLD) != 0 && b.mode == a.mode && b.owner == a.owner
                ? clear(value, b, HOLD)
                : value;
    }

    /** Clears {@code flags} of {@code a} within a compute of its name; returns the name's new value. */
    private @Nullable Object clear(@Nullable Object value, Acquisition a, int flags) {
        int before = a.registered;
        if ((before & flags) == 0) {
            return value;
        }
        int after = before & ~flags;
        a.registered = after;
        if ((before & LIVE) != 0 && (after & LIVE) == 0) {
            liveCount.decrementAndGet();
        }
        return after != 0 ? value : without(value, a);
    }

    private static Acquisition[] members(@Nullable Object v) {
        if (v instanceof Acquisition a) {
            return new Acquisition[] {a};
        }
        return v instanceof Acquisition[] all ? all : new Acquisition[0];
    }

    private static Object with(@Nullable Object v, Acquisition a) {
        if (v == null) {
            return a;
        }
        Acquisition[] old = members(v);
        Acquisition[] grown = java.util.Arrays.copyOf(old, old.length + 1);
        grown[old.length] = a;
        return grown;
    }

    private static @Nullable Object without(@Nullable Object v, Acquisition a) {
        if (v == a) {
            return null;
        }
        if (!(v instanceof Acquisition[] all)) {
            return v;
        }
        int i = 0;
        while (i < all.length && all[i] != a) {
            i++;
        }
        if (i == all.length) {
            return v;
        }
        if (all.length == 2) {
            return all[1 - i];
        }
        Acquisition[] shrunk = new Acquisition[all.length - 1];
        System.arraycopy(all, 0, shrunk, 0, i);
        System.arraycopy(all, i + 1, shrunk, i, all.length - i - 1);
        return shrunk;
    }
}

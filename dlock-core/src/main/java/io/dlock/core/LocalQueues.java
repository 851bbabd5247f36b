package io.dlock.core;

import java.util.ArrayDeque;
import java.util.concurrent.ConcurrentHashMap;
import org.jspecify.annotations.Nullable;

/**
 * JVM-local queueing of exclusive acquisitions: of the threads (and async callers) of one client
 * that want the same lock, only one, the <em>carrier</em>, stands in the backend's queue. The others
 * wait here, in arrival order. When the carrier releases a valid grant, the next local waiter takes
 * it over without a server round trip; after {@code maxHandoffs} consecutive local hand-offs the
 * grant goes back to the server and the next local waiter enqueues behind the other clients' waiters,
 * so no client starves another for longer than that bound.
 *
 * <p>Fencing: the engine's public token is the backend's token shifted left by {@link
 * Acquisition#LOCAL_BITS}; the n-th local hand-off adds n. Tokens so still rise with every grant,
 * local or not, and stay below the next backend grant's.
 *
 * <p>Memory: while one acquisition of a name is alone here (the usual case: a lock held with no
 * other thread of this client waiting for it), it is only flagged as the name's lone carrier in the
 * client's {@link Registry}, where it is anyway; the {@link Queue} (and this map's entry) is made
 * when a second acquisition of the name arrives (W4: no local queue object, and no node of a map of
 * its own, per held lock).
 *
 * <p>Concurrency: a name goes from nothing to a lone carrier, from a lone carrier to a queue with
 * that carrier (by the second arrival) or back to nothing (the lone carrier's end), each inside the
 * registry's compute for the name ({@link Registry#claimCarrier}, {@link Registry#dropCarrier}),
 * which decides each race: a lone carrier that ends while a second arrival makes the queue either
 * drops its flag first (the arrival then claims) or finds the queue and ends as its carrier. Each {@link Queue}'s monitor guards its
 * fields; the monitor is held only for a few field updates and CASes, never across I/O or a wait. A
 * waiter is claimed exactly once, by a CAS on {@link Acquisition#claimLocal}: a hand-off, a
 * promotion to carrier or its own cancellation. Queues with no carrier are removed from the map and
 * marked dead, so a racing caller retries on a fresh one.
 */
final class LocalQueues {
    /** One lock name's local queue. */
    static final class Queue {
        /** The acquisition that stands for this JVM in the backend queue, or holds the grant. */
        @Nullable
        Acquisition carrier;
        /** Local waiters in arrival order; allocated on first contention. */
        @Nullable
        ArrayDeque<Acquisition> waiters;

        boolean dead;
    }

    /** By lock name: the name's {@link Queue}, where one was made (lone carriers are in the registry). */
    private final ConcurrentHashMap<String, Queue> queues = new ConcurrentHashMap<>();

    private final int maxHandoffs;
    private final Registry registry;

    LocalQueues(int maxHandoffs, Registry registry) {
        this.maxHandoffs = maxHandoffs;
        this.registry = registry;
    }

    /** Starts {@code a}: in the backend if no one here has the lock, else as a local waiter. */
    void start(Acquisition a) {
        while (true) {
            Queue q = queues.get(a.name);
            if (q == null) {
                // No queue: a becomes the lone carrier, or, as a second acquisition of the name, makes
                // the queue (now worth making) with the lone carrier as its carrier, and joins it.
                int claimed = registry.claimCarrier(a, () -> queues.containsKey(a.name), carrier -> {
                    Queue made = new Queue();
                    made.carrier = carrier;
                    queues.put(a.name, made);
                });
                if (claimed == Registry.CLAIMED) {
                    a.start(); // alone: the carrier, with no queue made
                    return;
                }
                q = queues.get(a.name);
                if (q == null) {
                    continue; // the queue made or found ended meanwhile
                }
            }
            boolean carrier;
            synchronized (q) {
                if (q.dead) {
                    continue;
                }
                a.localQueue(q);
                carrier = q.carrier == null;
                if (carrier) {
                    q.carrier = a;
                } else {
                    if (!a.enterLocalWait()) {
                        return; // cancelled before it started
                    }
                    if (q.waiters == null) {
                        q.waiters = new ArrayDeque<>(4);
                    }
                    q.waiters.add(a);
                }
            }
            if (carrier) {
                a.start();
            } else {
                a.armLocalDeadline();
            }
            return;
        }
    }

    /**
     * Passes {@code from}'s grant to the next local waiter, if any may take it. Called by the
     * carrier's release with its state already RELEASING.
     *
     * @return true if a waiter now holds the grant (the backend entry stays)
     */
    boolean handOff(Acquisition from) {
        Queue q = queues.get(from.name);
        if (from.localSeq >= maxHandoffs || q == null) {
            return false; // a lone carrier has no one to hand off to
        }
        while (true) {
            Acquisition next;
            synchronized (q) {
                if (q.carrier != from) {
                    return false;
                }
                next = claimNext(q, Acquisition.LOCAL_HANDED);
                if (next == null) {
                    return false;
                }
                q.carrier = next;
            }
            if (next.takeOver(from)) {
                from.client.metrics.localHandOff(next);
                return true;
            }
            // Cancelled between the claim and the grant: it finished itself; try the one after.
            synchronized (q) {
                if (q.carrier == next) {
                    q.carrier = from;
                }
            }
        }
    }

    /**
     * {@code a} no longer stands in the backend for this JVM (released, withdrawn, failed, or a lost
     * grant cleaned up): the next local waiter, if any, enqueues in the backend. Idempotent.
     */
    void ended(Acquisition a) {
        if (registry.dropCarrier(a)) {
            return; // a lone carrier: nobody waits
        }
        // Else a queue's carrier (a second arrival may have made the queue meanwhile), or no carrier
        // here at all (another mode, local queueing off, or ended already).
        Queue q = queues.get(a.name);
        if (q == null) {
            return;
        }
        Acquisition next;
        synchronized (q) {
            if (q.carrier != a) {
                return;
            }
            // While the client closes, waiters are being cancelled: do not send them to the backend.
            next = a.client.isOpen() ? claimNext(q, Acquisition.LOCAL_PROMOTED) : null;
            q.carrier = next;
            if (next == null) {
                q.dead = true;
                queues.remove(a.name, q);
            }
        }
        if (next != null) {
            next.startPromoted();
        }
    }

    /** Forgets a cancelled local waiter. */
    void removeWaiter(Acquisition a) {
        Queue q = a.localQueue();
        if (q == null) {
            return;
        }
        synchronized (q) {
            if (q.waiters != null) {
                q.waiters.remove(a);
            }
        }
    }

    /** Claims the first waiter still waiting, moving it to {@code phase}; caller holds q's monitor. */
    private static @Nullable Acquisition claimNext(Queue q, int phase) {
        if (q.waiters == null) {
            return null;
        }
        Acquisition next;
        while ((next = q.waiters.poll()) != null) {
            if (next.claimLocal(phase)) {
                return next;
            }
        }
        return null;
    }

    /** Whether a {@link Queue} object exists for {@code name} (not only a lone carrier). */
    boolean hasQueue(String name) {
        return queues.containsKey(name);
    }

    /** Names with a lone carrier or a queue (tests). */
    int size() {
        return queues.size() + registry.carriers();
    }
}

package io.dlock.benchmarks;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import io.dlock.Capability;
import io.dlock.spi.ConnectionState;
import io.dlock.spi.EntryLostException;
import io.dlock.spi.Grant;
import io.dlock.spi.LockBackend;
import io.dlock.spi.LockProtocol;
import io.dlock.spi.LockRequest;
import io.dlock.spi.Position;
import io.dlock.spi.QueueEntry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * A backend with no I/O for the engine's microbenchmarks: a FIFO queue per lock name in this JVM,
 * replies completed on the calling thread, so that what JMH measures is the engine's own work per
 * acquire and release (allocation, state machine, bookkeeping), not a network.
 *
 * <p>It is a real lock (predecessor-only wake-ups, a fencing counter), but it serves exclusive
 * locks only and does not survive its JVM.
 *
 * <p>Concurrency: each queue is guarded by its own monitor; completions run after the monitor is
 * released, so a waiter's continuation never runs under it.
 */
final class InProcessBackend implements LockBackend, LockProtocol {
    private static final Set<Capability> CAPABILITIES = Set.copyOf(
            EnumSet.of(Capability.EXCLUSIVE, Capability.FAIR, Capability.FENCING_TOKENS, Capability.NO_HERD));

    private final ConcurrentHashMap<String, Queue> queues = new ConcurrentHashMap<>();
    private final AtomicLong tokens = new AtomicLong();
    private final AtomicLong keys = new AtomicLong();

    private static final class Slot {
        final QueueEntry entry;

        @Nullable
        CompletableFuture<Position> turn; // guarded by the queue; null while not waiting

        Slot(QueueEntry entry) {
            this.entry = entry;
        }
    }

    private static final class Queue {
        @GuardedBy("this")
        final List<Slot> slots = new ArrayList<>();

        @GuardedBy("this")
        int indexOf(String key) {
            for (int i = 0; i < slots.size(); i++) {
                if (slots.get(i).entry.key().equals(key)) {
                    return i;
                }
            }
            return -1;
        }

        @GuardedBy("this")
        Position positionOf(int i) {
            QueueEntry e = slots.get(i).entry;
            return i == 0
                    ? Position.granted(new Grant(e, e.token(), Long.MAX_VALUE))
                    : Position.waiting(e, slots.get(i - 1).entry.key());
        }
    }

    @Override
    public String name() {
        return "inprocess";
    }

    @Override
    public Set<Capability> capabilities() {
        return CAPABILITIES;
    }

    @Override
    public LockProtocol protocol() {
        return this;
    }

    @Override
    public void onConnectionState(Consumer<ConnectionState> listener) {
        listener.accept(ConnectionState.CONNECTED);
    }

    @Override
    public Duration maxSuspension() {
        return Duration.ofSeconds(10);
    }

    @Override
    public void close() {}

    @Override
    public CompletionStage<Position> enqueue(LockRequest request) {
        Queue q = queues.computeIfAbsent(request.lockName(), n -> new Queue());
        synchronized (q) {
            // Tokens are taken in queue order, so grants (which follow the queue) see them increase.
            QueueEntry e = new QueueEntry(
                    request.lockName(),
                    request.acquisitionId(),
                    request.lockName() + "/" + keys.incrementAndGet(),
                    1,
                    tokens.incrementAndGet());
            q.slots.add(new Slot(e));
            return CompletableFuture.completedFuture(q.positionOf(q.slots.size() - 1));
        }
    }

    @Override
    public CompletionStage<Position> awaitTurn(Position waiting) {
        QueueEntry e = waiting.entry();
        Queue q = queues.get(e.lockName());
        if (q == null) {
            return CompletableFuture.failedFuture(new EntryLostException(e, "no queue for its lock"));
        }
        CompletableFuture<Position> turn = new CompletableFuture<>();
        Position now = null;
        synchronized (q) {
            int i = q.indexOf(e.key());
            if (i < 0) {
                return CompletableFuture.failedFuture(new EntryLostException(e, "not in the queue"));
            }
            String predecessor = waiting.predecessor();
            if (predecessor == null || q.indexOf(predecessor) < 0) {
                now = q.positionOf(i);
            } else {
                q.slots.get(i).turn = turn;
            }
        }
        if (now != null) {
            turn.complete(now);
        }
        return turn;
    }

    @Override
    public CompletionStage<Void> release(QueueEntry entry) {
        Queue q = queues.get(entry.lockName());
        CompletableFuture<Position> wake = null;
        Position next = null;
        if (q != null) {
            synchronized (q) {
                int i = q.indexOf(entry.key());
                if (i >= 0) {
                    q.slots.remove(i);
                    if (i < q.slots.size() && q.slots.get(i).turn != null) {
                        wake = q.slots.get(i).turn;
                        q.slots.get(i).turn = null;
                        next = q.positionOf(i);
                    }
                }
            }
        }
        if (wake != null) {
            wake.complete(next);
        }
        return CompletableFuture.completedFuture(null);
    }

    @Override
    public CompletionStage<Optional<QueueEntry>> findOwnEntry(String lockName, String acquisitionId) {
        Queue q = queues.get(lockName);
        if (q != null) {
            synchronized (q) {
                for (Slot s : q.slots) {
                    if (s.entry.acquisitionId().equals(acquisitionId)) {
                        return CompletableFuture.completedFuture(Optional.of(s.entry));
                    }
                }
            }
        }
        return CompletableFuture.completedFuture(Optional.empty());
    }
}

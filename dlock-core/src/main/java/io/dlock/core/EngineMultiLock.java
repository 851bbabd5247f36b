package io.dlock.core;

import io.dlock.DistributedLock;
import io.dlock.Lease;
import io.dlock.LockLostException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.Lock;
import java.util.function.Consumer;
import java.util.stream.Collectors;
import org.jspecify.annotations.Nullable;

/**
 * All-or-nothing over several exclusive locks. Parts are taken one after another in one global
 * order (sorted by name), so two multi-locks over overlapping names can never hold one part each
 * while waiting for the other's. If a part is not granted in time or fails, the parts already held
 * are released before the call returns.
 *
 * <p>Concurrency: stateless; each call works on its own list of leases.
 */
final class EngineMultiLock implements DistributedLock, JavaLockView.Acquirer {
    private final EngineClient client;
    private final List<EngineLock> parts;
    private final String name;

    EngineMultiLock(EngineClient client, List<EngineLock> sortedParts) {
        this.client = client;
        this.parts = List.copyOf(sortedParts);
        this.name = parts.stream().map(EngineLock::name).collect(Collectors.joining(","));
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public Lease acquire() throws InterruptedException {
        return acquire(null, true).orElseThrow();
    }

    @Override
    public Optional<Lease> tryAcquire(Duration wait) throws InterruptedException {
        return acquire(EngineLock.checkWait(wait), true);
    }

    @Override
    public Optional<Lease> acquire(@Nullable Duration wait, boolean interruptible) throws InterruptedException {
        long deadline = wait == null ? 0 : client.ticker.read() + EngineLock.saturatedNanos(wait);
        List<Lease> held = new ArrayList<>(parts.size());
        try {
            for (EngineLock part : parts) {
                Optional<Lease> lease = part.acquire(
                        wait == null ? null : Duration.ofNanos(Math.max(0, deadline - client.ticker.read())),
                        interruptible);
                if (lease.isEmpty()) {
                    closeAll(held);
                    return Optional.empty();
                }
                held.add(lease.get());
            }
        } catch (InterruptedException | RuntimeException | Error e) {
            closeAll(held);
            throw e;
        }
        return Optional.of(new MultiLease(name, held));
    }

    /**
     * Takes the parts one after another, each completed by the previous one's callback. Any
     * completion of the returned future by the caller (cancel, completeExceptionally, orTimeout,
     * complete) abandons the attempt: the part in flight is cancelled, which withdraws it, and its
     * callback releases the parts already held. Only the chain touches {@code held}.
     */
    @Override
    public CompletableFuture<Lease> acquireAsync(Duration wait) {
        EngineLock.checkWait(wait);
        long deadline = client.ticker.read() + EngineLock.saturatedNanos(wait);
        CompletableFuture<Lease> result = new CompletableFuture<>();
        List<Lease> held = new ArrayList<>(parts.size());
        AtomicReference<CompletableFuture<Lease>> inFlight = new AtomicReference<>();
        CompletableFuture<?> unused = result.whenComplete((lease, error) -> {
            if (!(lease instanceof MultiLease)) {
                CompletableFuture<Lease> f = inFlight.get();
                if (f != null) {
                    f.cancel(true);
                }
            }
        });
        next(0, deadline, held, inFlight, result);
        return result;
    }

    private void next(
            int index,
            long deadline,
            List<Lease> held,
            AtomicReference<CompletableFuture<Lease>> inFlight,
            CompletableFuture<Lease> result) {
        if (index == parts.size()) {
            if (!result.complete(new MultiLease(name, held))) {
                closeAll(held);
            }
            return;
        }
        CompletableFuture<Lease> part;
        try {
            part = parts.get(index).acquireAsync(Duration.ofNanos(Math.max(0, deadline - client.ticker.read())));
        } catch (RuntimeException | Error e) {
            // From a part's callback (the client closed meanwhile) a throw would fail only that
            // callback's own future: the caller's must fail instead.
            closeAll(held);
            if (index == 0) {
                throw e;
            }
            result.completeExceptionally(e);
            return;
        }
        inFlight.set(part);
        if (result.isDone()) {
            part.cancel(true); // the caller gave up before this part was in flight for the handler above
        }
        CompletableFuture<?> unused = part.whenComplete((lease, error) -> {
            if (error != null || result.isDone()) {
                if (lease != null) {
                    held.add(lease);
                }
                closeAll(held);
                result.completeExceptionally(Acquisition.unwrap(
                        error != null ? error : new java.util.concurrent.CancellationException("cancelled")));
                return;
            }
            held.add(lease);
            next(index + 1, deadline, held, inFlight, result);
        });
    }

    private static void closeAll(List<Lease> held) {
        for (int i = held.size() - 1; i >= 0; i--) {
            held.get(i).close();
        }
        held.clear();
    }

    @Override
    public boolean isHeldByCurrentThread() {
        return parts.stream().allMatch(EngineLock::isHeldByCurrentThread);
    }

    /**
     * {@code unlock()} drops one hold of this thread on every part, valid or lost: a part lost to
     * the server must not keep the others held. A thread without a hold on every part did not lock
     * the multi-lock (a hold it has on some of the names came from those single locks), so it gets
     * {@link IllegalMonitorStateException} and nothing is released.
     */
    @Override
    public Lock asJavaLock() {
        return new JavaLockView(this, client.backendName, () -> {
            if (!parts.stream().allMatch(EngineLock::hasHoldOfCurrentThread)) {
                throw new IllegalMonitorStateException("multi-lock '" + name + "' on " + client.backendName
                        + " is not held by thread '" + Thread.currentThread().getName() + "'");
            }
            for (int i = parts.size() - 1; i >= 0; i--) {
                parts.get(i).unlockCurrentThread();
            }
        });
    }

    @Override
    public String toString() {
        return "DistributedLock[multi " + name + " on " + client.backendName + "]";
    }

    /** One lease over every part: valid while all are, lost when any is. */
    private static final class MultiLease implements Lease {
        private final String name;
        private final List<Lease> parts;

        MultiLease(String name, List<Lease> parts) {
            this.name = name;
            this.parts = List.copyOf(parts);
        }

        @Override
        public String lockName() {
            return name;
        }

        /** The highest token of the parts; fence each resource with its own part where that matters. */
        @Override
        public long fencingToken() {
            return parts.stream().mapToLong(Lease::fencingToken).max().orElseThrow();
        }

        @Override
        public boolean isValid() {
            return parts.stream().allMatch(Lease::isValid);
        }

        @Override
        public void checkValid() {
            parts.forEach(Lease::checkValid);
        }

        @Override
        public Lease onLost(Consumer<LockLostException> listener) {
            AtomicBoolean fired = new AtomicBoolean();
            for (Lease part : parts) {
                part.onLost(e -> {
                    if (fired.compareAndSet(false, true)) {
                        listener.accept(e);
                    }
                });
            }
            return this;
        }

        @Override
        public void close() {
            // The first part closed refuses a non-owner thread (IllegalMonitorStateException) before
            // any is closed: every part has the same owner.
            for (int i = parts.size() - 1; i >= 0; i--) {
                parts.get(i).close();
            }
        }

        @Override
        public CompletionStage<Void> closeAsync() {
            CompletableFuture<?>[] releases = new CompletableFuture<?>[parts.size()];
            for (int i = parts.size() - 1; i >= 0; i--) {
                releases[i] = parts.get(i).closeAsync().toCompletableFuture();
            }
            return CompletableFuture.allOf(releases);
        }

        @Override
        public String toString() {
            return "Lease[multi " + name + ", token=" + fencingToken() + ", valid=" + isValid() + "]";
        }
    }
}

package io.dlock.core;

import io.dlock.Lease;
import io.dlock.LockLostException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;

/**
 * One handle on a grant. Nested reentrant leases are separate handles on the same {@link
 * Acquisition}; each handle closes once.
 *
 * <p>Concurrency: {@code closed} is a CAS so that a handle drops exactly one hold. It is a
 * volatile field moved through a {@link VarHandle}, not an {@code AtomicBoolean}: one object less per
 * held lock (W4); the CAS and the volatile reads give the same ordering an {@code AtomicBoolean}
 * gave.
 */
final class EngineLease implements Lease {
    private final Acquisition acquisition;

    private volatile boolean closed;

    private static final VarHandle CLOSED;

    static {
        try {
            CLOSED = MethodHandles.lookup().findVarHandle(EngineLease.class, "closed", boolean.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    EngineLease(Acquisition acquisition) {
        // The token is the acquisition's, written once before its grant (a local hand-off takes a
        // new acquisition), so the handle does not copy it (8 B per held lock, W4).
        this.acquisition = acquisition;
    }

    Acquisition acquisition() {
        return acquisition;
    }

    @Override
    public String lockName() {
        return acquisition.name;
    }

    @Override
    public long fencingToken() {
        return acquisition.fencingToken();
    }

    @Override
    public boolean isValid() {
        return !closed && acquisition.isValid();
    }

    @Override
    public void checkValid() {
        if (isValid()) {
            return;
        }
        LockLostException lost = acquisition.lostCause();
        if (lost != null) {
            throw lost;
        }
        throw new LockLostException(
                acquisition.name,
                acquisition.client.backendName,
                closed ? "the lease was closed" : "the lease is no longer valid (" + acquisition.state() + ")",
                null);
    }

    @Override
    public Lease onLost(Consumer<LockLostException> listener) {
        acquisition.addLostListener(Objects.requireNonNull(listener, "listener"));
        return this;
    }

    @Override
    public void close() {
        checkCloser();
        if (CLOSED.compareAndSet(this, false, true)) {
            long start = System.nanoTime();
            awaitRelease(acquisition.exit(true), acquisition.client, start);
        }
    }

    @Override
    public CompletionStage<Void> closeAsync() {
        checkCloser();
        if (!CLOSED.compareAndSet(this, false, true)) {
            return CompletableFuture.completedFuture(null);
        }
        // Not the caller's thread for the protocol's I/O (callerWaits false); a copy, so that a
        // caller completing what it got back cannot complete the engine's own future.
        return acquisition.exit(false).copy();
    }

    private void checkCloser() {
        Thread owner = acquisition.owner;
        if (acquisition.reentrant && owner != null && owner != Thread.currentThread() && !closed) {
            throw new IllegalMonitorStateException("lock '" + acquisition.name + "' on "
                    + acquisition.client.backendName + ": lease is owned by thread '" + owner.getName()
                    + "', not by '" + Thread.currentThread().getName() + "'; the lock stays held");
        }
    }

    /** Waits for a release to be confirmed, bounded by the connect timeout; never throws for it. */
    static void awaitRelease(CompletableFuture<Void> release, EngineClient client) {
        awaitRelease(release, client, System.nanoTime());
    }

    /**
     * As {@link #awaitRelease(CompletableFuture, EngineClient)}, the bound
     * counted from {@code startNanos} ({@link System#nanoTime()} before the release was started):
     * a protocol may have spent part of it on the caller's thread already.
     */
    static void awaitRelease(CompletableFuture<Void> release, EngineClient client, long startNanos) {
        if (release.isDone()) {
            return;
        }
        long left = client.options.connectTimeout().toNanos() - (System.nanoTime() - startNanos);
        if (left <= 0) {
            return; // the protocol keeps retrying in the background until the entry is gone
        }
        boolean interrupted = Thread.interrupted();
        try {
            release.get(left, TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            interrupted = true;
        } catch (ExecutionException | TimeoutException e) {
            // The protocol keeps retrying in the background until the entry is gone.
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    @Override
    public String toString() {
        return "Lease[lock=" + acquisition.name + ", token=" + acquisition.fencingToken() + ", valid=" + isValid()
                + "]";
    }
}

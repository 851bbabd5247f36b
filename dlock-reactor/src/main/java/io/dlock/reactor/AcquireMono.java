package io.dlock.reactor;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import io.dlock.Lease;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.function.BiConsumer;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Operators;

/**
 * One {@code acquireAsync} attempt per subscription, emitted as a {@code Mono<Lease>}.
 *
 * <p>Concurrency: each subscription ({@link Attempt}) decides under its own monitor, once, which
 * of three things happens to the attempt: the lease is emitted (requested and not cancelled), the
 * attempt is withdrawn (cancelled before the future completed: the future is cancelled, which
 * withdraws the queue entry and releases a grant that lands later), or the lease is released
 * (cancelled after the future completed but before the lease was emitted: a grant that the
 * subscriber never saw). Signals to the subscriber are sent outside the monitor.
 *
 * <p>Failure: a failed future fails the subscription with the future's cause ({@code
 * LockTimeoutException}, {@code LockBackendException}, ...); a failure after a cancel is dropped
 * silently, as the subscriber asked for nothing more. An exception from starting the attempt (a
 * closed client, bad input) fails the subscription and starts nothing.
 *
 * <p>Invariants: at most one of emitted / withdrawn / released per subscription; a lease is never
 * kept in {@link Attempt#value} once the subscription is cancelled or done.
 *
 * <p>Why not {@code Mono.fromFuture(supplier, false)}: it attaches to the future only on request,
 * so a subscriber that cancels before requesting would leave a lease that was already granted
 * unreleased; and {@code Mono.create}'s sink may report a value that races a cancel as dropped
 * rather than discarded. Neither is acceptable for a lock.
 */
final class AcquireMono extends Mono<Lease> {
    private final Supplier<CompletableFuture<Lease>> start;

    private AcquireMono(Supplier<CompletableFuture<Lease>> start) {
        this.start = start;
    }

    /** A new acquisition, through Reactor's assembly hooks as the built-in operators are. */
    static Mono<Lease> of(Supplier<CompletableFuture<Lease>> start) {
        return onAssembly(new AcquireMono(start));
    }

    @Override
    public void subscribe(CoreSubscriber<? super Lease> actual) {
        Attempt attempt = new Attempt(actual);
        actual.onSubscribe(attempt);
        attempt.begin(start);
    }

    /** Releases a lease that no subscriber will see; the release runs on the client's threads. */
    static void releaseUnseen(Lease lease) {
        var unused = lease.closeAsync();
    }

    static final class Attempt implements Subscription, BiConsumer<Lease, Throwable> {
        private final CoreSubscriber<? super Lease> actual;

        @GuardedBy("this")
        private @Nullable CompletableFuture<Lease> future;

        /** A granted lease waiting for the subscriber's request. */
        @GuardedBy("this")
        private @Nullable Lease value;

        @GuardedBy("this")
        private boolean requested;

        @GuardedBy("this")
        private boolean cancelled;

        /** A signal has been sent (or is being sent) to the subscriber: nothing else may be. */
        @GuardedBy("this")
        private boolean done;

        Attempt(CoreSubscriber<? super Lease> actual) {
            this.actual = actual;
        }

        void begin(Supplier<CompletableFuture<Lease>> start) {
            synchronized (this) {
                if (cancelled) {
                    return; // cancelled in onSubscribe: nothing is started
                }
            }
            CompletableFuture<Lease> f;
            try {
                f = start.get();
            } catch (RuntimeException | Error e) {
                fail(e);
                return;
            }
            boolean cancelledMeanwhile;
            synchronized (this) {
                future = f;
                cancelledMeanwhile = cancelled;
            }
            if (cancelledMeanwhile) {
                f.cancel(false);
            }
            // Runs at once if already complete; after a cancel it releases a lease that won the race.
            f.whenComplete(this);
        }

        /** The future's completion, on the client's callback thread (or at once in begin). */
        @Override
        public void accept(@Nullable Lease lease, @Nullable Throwable error) {
            if (error != null || lease == null) {
                fail(error != null ? error : new IllegalStateException("acquireAsync completed without a lease"));
                return;
            }
            boolean emit;
            synchronized (this) {
                if (cancelled || done) {
                    emit = false;
                } else if (requested) {
                    done = true;
                    emit = true;
                } else {
                    value = lease;
                    return;
                }
            }
            if (emit) {
                actual.onNext(lease);
                actual.onComplete();
            } else {
                releaseUnseen(lease);
            }
        }

        private void fail(Throwable error) {
            synchronized (this) {
                if (cancelled || done) {
                    return;
                }
                done = true;
            }
            Throwable cause =
                    error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
            if (cause instanceof CancellationException) {
                // Someone else completed the future: the attempt was abandoned, as acquireAsync says.
                cause = new CancellationException("the acquireAsync future was cancelled outside this Mono");
            }
            actual.onError(cause);
        }

        @Override
        public void request(long n) {
            if (!Operators.validate(n)) {
                return;
            }
            Lease ready;
            synchronized (this) {
                if (cancelled || done || requested) {
                    return;
                }
                requested = true;
                ready = value;
                if (ready == null) {
                    return;
                }
                value = null;
                done = true;
            }
            actual.onNext(ready);
            actual.onComplete();
        }

        @Override
        public void cancel() {
            CompletableFuture<Lease> f;
            Lease ready;
            synchronized (this) {
                if (cancelled || done) {
                    return;
                }
                cancelled = true;
                f = future;
                ready = value;
                value = null;
            }
            if (ready != null) {
                releaseUnseen(ready);
            } else if (f != null) {
                // Withdraws a waiting attempt; if the future completed already, accept() releases the lease.
                f.cancel(false);
            }
        }
    }
}

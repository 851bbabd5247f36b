package io.dlock.reactor;

import io.dlock.DistributedLock;
import io.dlock.DistributedSemaphore;
import io.dlock.Lease;
import io.dlock.LockBackendException;
import io.dlock.LockTimeoutException;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;
import java.util.function.Supplier;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * Reactor views of dlock's locks and semaphores, built on {@link DistributedLock#acquireAsync} and
 * {@link DistributedSemaphore#acquireAsync}, so no thread is parked while a subscriber waits.
 *
 * <pre>{@code
 * Flux<Order> shipped = ReactorLocks.withLock(client.lock("orders"), Duration.ofSeconds(5),
 *         lease -> ship(order, lease.fencingToken()));   // released on complete, error or cancel
 * }</pre>
 *
 * <p>Every {@code Mono} and {@code Flux} here is lazy: nothing is sent to the backend until it is
 * subscribed, and each subscription is one attempt of its own. Cancelling a subscription that waits
 * withdraws its attempt (the queue entry leaves the server's queue, and a grant that races with the
 * cancel is released), as completing {@code acquireAsync}'s future yourself does.
 *
 * <p>Concurrency: a lease is emitted on the client's callback thread, or, when the grant came before
 * the subscriber's request, on the requesting thread. A lease granted to a subscription that is
 * cancelled before the lease was emitted is released, never emitted (also when the subscriber
 * cancels without ever requesting). A lease that has been emitted is the subscriber's to close
 * ({@link #release(Lease)}); use {@link #withLock} or {@link #using} where the lock should end with
 * the work.
 *
 * <p>Thread-safety: stateless; every method is safe from any thread, and each returned publisher
 * may be subscribed any number of times, from any thread.
 */
public final class ReactorLocks {
    private ReactorLocks() {}

    /**
     * A lazy acquisition of {@code lock}: each subscription starts one {@code acquireAsync(wait)} and
     * emits its lease.
     *
     * <p>Blocking: never; the subscriber is signalled from the client's callback thread. Thread-safety:
     * safe from any thread; the lease is owned by no thread (close it from any thread, not
     * reentrant). On failure: the {@code Mono} fails with {@link LockTimeoutException} when the lock
     * is not granted within {@code wait}, {@link LockBackendException} when the backend cannot be
     * reached or refuses, {@link IllegalStateException} if the client is closed; in each case no
     * queue entry is left behind. Cancelling the subscription withdraws the attempt; a grant that
     * races with the cancel is released, never emitted.
     *
     * @param lock the lock to acquire
     * @param wait how long each subscription waits for the grant; {@link Duration#ZERO} makes one
     *     attempt without waiting
     * @return a {@code Mono} that emits the lease
     * @throws IllegalArgumentException if {@code wait} is negative; nothing is attempted
     * @throws NullPointerException if an argument is null
     */
    public static Mono<Lease> acquire(DistributedLock lock, Duration wait) {
        Objects.requireNonNull(lock, "lock");
        checkWait(wait);
        return fromAttempt(() -> lock.acquireAsync(wait));
    }

    /**
     * A lazy acquisition of {@code permits} permits of {@code semaphore}: each subscription starts one
     * {@code acquireAsync(permits, wait)} and emits its lease, which holds all of them.
     *
     * <p>Blocking: never; the subscriber is signalled from the client's callback thread. Thread-safety:
     * safe from any thread; the lease is owned by no thread. On failure: as {@link
     * #acquire(DistributedLock, Duration)}; a backend without semaphores fails the {@code Mono} with
     * {@link UnsupportedOperationException}.
     *
     * @param semaphore the semaphore to take permits of
     * @param permits how many permits, from 1 to {@link DistributedSemaphore#permits()}
     * @param wait how long each subscription waits; {@link Duration#ZERO} makes one attempt
     * @return a {@code Mono} that emits a lease of all {@code permits} permits
     * @throws IllegalArgumentException if {@code permits} is out of range or {@code wait} is
     *     negative; nothing is attempted
     * @throws NullPointerException if an argument is null
     */
    public static Mono<Lease> acquire(DistributedSemaphore semaphore, int permits, Duration wait) {
        Objects.requireNonNull(semaphore, "semaphore");
        if (permits < 1 || permits > semaphore.permits()) {
            throw new IllegalArgumentException("semaphore '" + semaphore.name() + "': permits must be 1 to "
                    + semaphore.permits() + ", was " + permits);
        }
        checkWait(wait);
        return fromAttempt(() -> semaphore.acquireAsync(permits, wait));
    }

    /**
     * Runs the publisher {@code action} makes while holding {@code lock}, and releases the lock when
     * that publisher completes, fails or is cancelled ({@link Flux#usingWhen}). Nothing starts until
     * subscription; each subscription acquires once.
     *
     * <p>Blocking: never. The action's signals arrive on its own threads; the completion or error
     * after the release arrives on {@link Schedulers#boundedElastic()} once the backend confirmed the
     * release (see {@link #release(Lease)}). Thread-safety: safe from any thread. On failure: an
     * acquisition failure ({@link LockTimeoutException}, {@link LockBackendException}) fails the
     * {@code Flux} and the action is not called; an error of the action, or an exception thrown by
     * {@code action} itself, releases the lock and then reaches the subscriber; a cancel while waiting
     * withdraws the attempt, a cancel while running releases the lock.
     *
     * @param lock the lock to hold
     * @param wait how long to wait for the lock
     * @param action makes the work to run under the lock, given the lease (pass its {@link
     *     Lease#fencingToken()} on)
     * @param <T> the type of the work's elements
     * @return the work's elements
     * @throws IllegalArgumentException if {@code wait} is negative; nothing is attempted
     * @throws NullPointerException if an argument is null
     */
    public static <T> Flux<T> withLock(
            DistributedLock lock, Duration wait, Function<? super Lease, ? extends Publisher<? extends T>> action) {
        return using(acquire(lock, wait), action);
    }

    /**
     * Runs the publisher {@code action} makes while holding {@code permits} permits of {@code
     * semaphore}, and gives them back when that publisher completes, fails or is cancelled.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: as {@link #withLock}.
     *
     * @param semaphore the semaphore
     * @param permits how many permits, from 1 to {@link DistributedSemaphore#permits()}
     * @param wait how long to wait for the permits
     * @param action makes the work to run while holding them
     * @param <T> the type of the work's elements
     * @return the work's elements
     * @throws IllegalArgumentException if {@code permits} is out of range or {@code wait} is
     *     negative; nothing is attempted
     * @throws NullPointerException if an argument is null
     */
    public static <T> Flux<T> withPermits(
            DistributedSemaphore semaphore,
            int permits,
            Duration wait,
            Function<? super Lease, ? extends Publisher<? extends T>> action) {
        return using(acquire(semaphore, permits, wait), action);
    }

    /**
     * Runs the publisher {@code action} makes while holding the lease {@code acquisition} emits, and
     * releases it when that publisher completes, fails or is cancelled: {@link #withLock} for any
     * {@code Mono<Lease>} (a read or write lock, a multi-lock: {@code using(acquire(rw.writeLock(),
     * wait), ...)}).
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: as {@link #withLock}; an
     * empty {@code acquisition} completes the {@code Flux} without calling {@code action}.
     *
     * @param acquisition emits the lease to hold, at most one
     * @param action makes the work to run while holding it
     * @param <T> the type of the work's elements
     * @return the work's elements
     * @throws NullPointerException if an argument is null
     */
    public static <T> Flux<T> using(
            Mono<Lease> acquisition, Function<? super Lease, ? extends Publisher<? extends T>> action) {
        Objects.requireNonNull(acquisition, "acquisition");
        Objects.requireNonNull(action, "action");
        return Flux.usingWhen(
                acquisition, action, ReactorLocks::release, (lease, error) -> release(lease), ReactorLocks::release);
    }

    /**
     * Releases {@code lease} without parking a thread: calls {@link Lease#closeAsync()} at
     * subscription, and completes once the backend confirmed the release (or, after a failure, left
     * it to the client's background retry).
     *
     * <p>Blocking: never for dlock's leases, whose {@code closeAsync} sends the release from the
     * client's own threads (another implementation's default {@code closeAsync} calls {@code close()},
     * which blocks up to the client's connect timeout). The completion is signalled on {@link
     * Schedulers#boundedElastic()}, never on the backend client's I/O thread that confirmed the
     * release, so that what follows cannot hold up the backend's replies. Thread-safety: safe from
     * any thread for leases from {@code acquireAsync} (and so from this class). On failure: never
     * fails for backend failures (the lease is invalid either way); closing again completes at once.
     *
     * @param lease the lease to release
     * @return a {@code Mono} that completes once the release has ended
     * @throws NullPointerException if {@code lease} is null
     */
    public static Mono<Void> release(Lease lease) {
        Objects.requireNonNull(lease, "lease");
        return Mono.defer(() -> Mono.fromCompletionStage(lease.closeAsync())).publishOn(Schedulers.boundedElastic());
    }

    private static Mono<Lease> fromAttempt(Supplier<CompletableFuture<Lease>> start) {
        return AcquireMono.of(start);
    }

    private static void checkWait(Duration wait) {
        Objects.requireNonNull(wait, "wait");
        if (wait.isNegative()) {
            throw new IllegalArgumentException("wait must not be negative: " + wait);
        }
    }
}

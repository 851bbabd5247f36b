/**
 * Kotlin coroutines for dlock: suspending acquisition over `acquireAsync`, which parks no thread.
 *
 * ```kotlin
 * client.lock("orders").withLock(5.seconds) { lease ->
 *     store.write(order, lease.fencingToken())   // may suspend and resume on another thread
 * }
 * ```
 *
 * Every function here suspends instead of blocking, and is cancellable: cancelling the coroutine (its
 * job, a `withTimeout`, a failed sibling) while it waits withdraws the attempt: the queue entry leaves
 * the server's queue, and a grant that races with the cancellation is released, never returned.
 * Leases from these functions are owned by no thread (as `acquireAsync`'s are), so a coroutine may
 * resume on any thread and close its lease there; they are not reentrant.
 *
 * The waits are `kotlin.time.Duration`s on purpose: the blocking `tryAcquire(java.time.Duration)`
 * and `acquire()` members of the Java interfaces would win over extensions with their signatures.
 * `Duration.INFINITE` waits as long as it takes.
 *
 * Thread-safety: every function is safe from any thread and any dispatcher.
 */
@file:JvmName("LockCoroutines")

package io.dlock.kotlin

import io.dlock.DistributedLock
import io.dlock.DistributedSemaphore
import io.dlock.Lease
import io.dlock.LockBackendException
import io.dlock.LockClient
import io.dlock.LockTimeoutException
import java.util.concurrent.CancellationException
import java.util.concurrent.CompletableFuture
import java.util.concurrent.CompletionException
import kotlin.coroutines.resumeWithException
import kotlin.time.Duration
import kotlin.time.toJavaDuration
import kotlinx.coroutines.NonCancellable
import kotlinx.coroutines.future.await
import kotlinx.coroutines.suspendCancellableCoroutine
import kotlinx.coroutines.withContext

/**
 * Acquires this lock, suspending until it is granted or [wait] passes.
 *
 * Suspends: until granted, at most [wait]; no thread is parked meanwhile. Thread-safety: safe from
 * any thread; the lease is owned by no thread (close it from any thread; not reentrant). On failure:
 * [LockTimeoutException] when not granted within [wait], [LockBackendException] when the backend
 * cannot be reached or refuses, [IllegalStateException] if the client is closed; no queue entry is
 * left behind. Cancellation of the coroutine withdraws the attempt (a grant that races with it is
 * released) and throws [kotlinx.coroutines.CancellationException].
 *
 * @param wait how long to wait; [Duration.ZERO] makes one attempt, [Duration.INFINITE] waits as long
 *   as it takes
 * @return the lease; close it (or [release] it) when done
 * @throws IllegalArgumentException if [wait] is negative; nothing is attempted
 */
public suspend fun DistributedLock.acquire(wait: Duration): Lease = acquireAsync(wait.toJava()).awaitLease()

/**
 * Acquires this lock if it is granted within [wait], else returns null.
 *
 * Suspends: until granted, at most [wait]. Thread-safety: safe from any thread; the lease is owned by
 * no thread. On failure: null only when someone else held the lock for all of [wait];
 * [LockBackendException] when the backend cannot be reached (never null for that), no queue entry
 * left behind. Cancellation withdraws the attempt, as for [acquire].
 *
 * @param wait how long to wait; [Duration.ZERO] makes one attempt
 * @return the lease, or null if the lock was not granted in time
 * @throws IllegalArgumentException if [wait] is negative; nothing is attempted
 */
public suspend fun DistributedLock.tryAcquire(wait: Duration): Lease? =
    try {
        acquire(wait)
    } catch (e: LockTimeoutException) {
        null
    }

/**
 * Runs [action] while holding this lock, and releases it when [action] returns, throws or is
 * cancelled.
 *
 * Suspends: until granted (at most [wait]), then for [action], then until the backend confirmed the
 * release (at most the client's connect timeout; the release is not cancellable, so a cancelled
 * coroutine still lets the lock go before it finishes). Thread-safety: safe from any thread;
 * [action] may suspend and resume on any thread. On failure: [LockTimeoutException] or
 * [LockBackendException] from the acquisition, and [action] does not run; an exception of [action]
 * is rethrown after the release; cancellation while waiting withdraws the attempt, while running
 * releases the lock.
 *
 * @param wait how long to wait for the lock
 * @param action the work, given the lease (pass its fencing token on)
 * @return what [action] returns
 * @throws IllegalArgumentException if [wait] is negative; nothing is attempted
 */
public suspend fun <T> DistributedLock.withLock(wait: Duration, action: suspend (Lease) -> T): T =
    acquire(wait).use(action)

/**
 * Takes [permits] permits of this semaphore, suspending until they are granted or [wait] passes.
 *
 * Suspends: until granted, at most [wait]. Thread-safety: safe from any thread; the lease, which
 * holds all the permits, is owned by no thread. On failure: as [DistributedLock.acquire]; a backend
 * without semaphores throws [UnsupportedOperationException].
 *
 * @param permits how many permits, from 1 to [DistributedSemaphore.permits]
 * @param wait how long to wait; [Duration.ZERO] makes one attempt
 * @return a lease of all [permits] permits
 * @throws IllegalArgumentException if [permits] is out of range or [wait] is negative; nothing is
 *   attempted
 */
public suspend fun DistributedSemaphore.acquire(permits: Int, wait: Duration): Lease =
    acquireAsync(permits, wait.toJava()).awaitLease()

/**
 * Takes [permits] permits of this semaphore if they are granted within [wait], else returns null.
 *
 * Suspends: at most [wait]. Thread-safety: safe from any thread. On failure: null only when the
 * permits were taken for all of [wait]; [LockBackendException] when the backend cannot be reached.
 * Cancellation withdraws the attempt.
 *
 * @param permits how many permits, from 1 to [DistributedSemaphore.permits]
 * @param wait how long to wait
 * @return the lease, or null if not granted in time
 * @throws IllegalArgumentException if [permits] is out of range or [wait] is negative
 */
public suspend fun DistributedSemaphore.tryAcquire(permits: Int, wait: Duration): Lease? =
    try {
        acquire(permits, wait)
    } catch (e: LockTimeoutException) {
        null
    }

/**
 * Runs [action] while holding [permits] permits of this semaphore, and gives them back when [action]
 * returns, throws or is cancelled.
 *
 * Suspends: as [DistributedLock.withLock]. Thread-safety: safe from any thread. On failure: as
 * [DistributedLock.withLock].
 *
 * @param permits how many permits, from 1 to [DistributedSemaphore.permits]
 * @param wait how long to wait for them
 * @param action the work, given the lease
 * @return what [action] returns
 * @throws IllegalArgumentException if [permits] is out of range or [wait] is negative
 */
public suspend fun <T> DistributedSemaphore.withPermits(
    permits: Int,
    wait: Duration,
    action: suspend (Lease) -> T,
): T = acquire(permits, wait).use(action)

/**
 * Runs [action] while holding lock [name] of this client: `lock(name).withLock(wait, action)`, the
 * suspending counterpart of the blocking [LockClient.withLock].
 *
 * Suspends: as [DistributedLock.withLock]. Thread-safety: safe from any thread. On failure: as
 * [DistributedLock.withLock]; a bad name is an [IllegalArgumentException].
 *
 * @param name the lock's name
 * @param wait how long to wait for the lock
 * @param action the work, given the lease
 * @return what [action] returns
 */
public suspend fun <T> LockClient.withLock(name: String, wait: Duration, action: suspend (Lease) -> T): T =
    lock(name).withLock(wait, action)

/**
 * Releases this lease and suspends until the backend confirmed the release (or, after a failure,
 * left it to the client's background retry), without parking a thread.
 *
 * Suspends: until the release has ended, at most about the client's connect timeout; not
 * cancellable (the release goes on either way, and the lease is invalid at once). Thread-safety:
 * leases from these functions from any thread; a thread-owned lease only from its owner thread. On
 * failure: never throws for backend failures; releasing again returns at once.
 *
 * @throws IllegalMonitorStateException if this is a thread-owned lease of another thread; it stays
 *   held
 */
public suspend fun Lease.release() {
    val released = closeAsync()
    withContext(NonCancellable) { released.await() }
}

private suspend fun <T> Lease.use(action: suspend (Lease) -> T): T {
    try {
        return action(this)
    } finally {
        release()
    }
}

private fun Duration.toJava(): java.time.Duration =
    when {
        this == Duration.INFINITE -> java.time.Duration.ofSeconds(Long.MAX_VALUE)
        else -> toJavaDuration() // negative: acquireAsync's IllegalArgumentException
    }

/**
 * Awaits an `acquireAsync` future. Cancelling the coroutine cancels the future, which withdraws the
 * attempt; a lease that completed the future but reaches a coroutine that was cancelled meanwhile
 * (before or while it resumes) is released by the `onCancellation` handler instead of being lost.
 * `kotlinx.coroutines.future.await` would drop such a lease.
 */
private suspend fun CompletableFuture<Lease>.awaitLease(): Lease =
    suspendCancellableCoroutine { cont ->
        whenComplete { lease, error ->
            if (error != null) {
                val cause = if (error is CompletionException && error.cause != null) error.cause!! else error
                // After the coroutine's own cancel, the continuation is already cancelled: this is ignored.
                cont.resumeWithException(
                    if (cause is CancellationException) CancellationException("acquireAsync was cancelled") else cause
                )
            } else {
                cont.resume(lease) { _, granted, _ -> granted.closeAsync() }
            }
        }
        cont.invokeOnCancellation { cancel(false) }
    }

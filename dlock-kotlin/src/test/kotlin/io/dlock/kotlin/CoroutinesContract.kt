package io.dlock.kotlin

import io.dlock.Lease
import io.dlock.LockBackendException
import io.dlock.LockClient
import io.dlock.LockTimeoutException
import io.dlock.core.Diagnostics
import io.dlock.testkit.FaultProxy
import io.dlock.testkit.LockFixtureSupport
import io.dlock.testkit.Timing
import java.util.Collections
import java.util.concurrent.ThreadLocalRandom
import java.util.concurrent.atomic.AtomicInteger
import kotlin.time.Duration
import kotlin.time.Duration.Companion.milliseconds
import kotlin.time.Duration.Companion.minutes
import kotlin.time.Duration.Companion.seconds
import kotlinx.coroutines.CoroutineStart
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.TimeoutCancellationException
import kotlinx.coroutines.async
import kotlinx.coroutines.awaitAll
import kotlinx.coroutines.awaitCancellation
import kotlinx.coroutines.coroutineScope
import kotlinx.coroutines.delay
import kotlinx.coroutines.launch
import kotlinx.coroutines.test.runTest
import kotlinx.coroutines.withContext
import kotlinx.coroutines.withTimeout
import kotlinx.coroutines.yield
import org.assertj.core.api.Assertions.assertThat
import org.assertj.core.api.Assertions.assertThatThrownBy
import org.awaitility.Awaitility.await
import org.junit.jupiter.api.AfterEach
import org.junit.jupiter.api.Test

/**
 * What the suspending extensions must do on a real server; each backend's IT says how to reach it.
 * Tests run in `runTest` (virtual time for `delay`, real time for the server's answers), and switch to
 * `Dispatchers.Default` where coroutines must really run side by side. The server's own records
 * (through the backend's inspector) tell whether a cancelled coroutine left an entry behind; after
 * each test every client is closed and the namespace must be empty.
 */
abstract class CoroutinesContract : LockFixtureSupport() {

    /** A URI for this test's namespace that reaches the server through [port] (a proxy). */
    abstract fun uriVia(port: Int, query: String): String

    abstract fun serverPort(): Int

    private var observer: LockClient? = null

    private fun scaled(seconds: Long): java.time.Duration = Timing.scale(java.time.Duration.ofSeconds(seconds))

    override fun entries(name: String): List<String> {
        val o = observer ?: client().also { observer = it }
        return Diagnostics.inspector(o).orElseThrow().inspect(name)
            .filter { it.name() == name }
            .flatMap { s -> (s.holders() + s.waiters()).map { it.key() } }
    }

    @AfterEach
    fun closeClientsAndCheckClean() {
        closeTracked()
        observer = null
        LockClient.connect(uri(patient())).use { fresh ->
            assertThat(Diagnostics.inspector(fresh).orElseThrow().inspect(""))
                .`as`("locks left in the test's namespace")
                .isEmpty()
        }
    }

    private fun awaitEntries(name: String, count: Int) {
        await().atMost(scaled(5)).until { entries(name).size == count }
    }

    @Test
    fun acquire_free_grantsLeaseOwnedByNoThread() = runTest {
        val lock = client().lock("free")
        val lease = lock.acquire(5.seconds)
        assertThat(lease.isValid).isTrue()
        assertThat(lock.isHeldByCurrentThread).isFalse()
        // Released from another thread than the one that acquired: allowed for async leases.
        withContext(Dispatchers.Default) { lease.release() }
        assertThat(lease.isValid).isFalse()
        assertThat(entries("free")).isEmpty()
        val again = lock.tryAcquire(Duration.ZERO)
        assertThat(again).isNotNull
        assertThat(again!!.fencingToken()).isGreaterThan(lease.fencingToken())
        again.release()
    }

    @Test
    fun acquireAndTryAcquire_heldElsewhere_timeoutOrNull_noEntryLeft() = runTest {
        val held = client().lock("busy").acquire()
        val other = client().lock("busy")
        val start = System.nanoTime()
        assertThatThrownBy { kotlinx.coroutines.runBlocking { other.acquire(300.milliseconds) } }
            .isInstanceOf(LockTimeoutException::class.java)
            .hasMessageContaining("lock 'busy' on " + backendName())
        assertThat(java.time.Duration.ofNanos(System.nanoTime() - start)).isGreaterThanOrEqualTo(
            java.time.Duration.ofMillis(300)
        )
        assertThat(other.tryAcquire(200.milliseconds)).isNull()
        awaitEntries("busy", 1)
        held.close()
        val got = other.tryAcquire(5.seconds)
        assertThat(got).isNotNull
        got!!.release()
    }

    @Test
    fun acquire_cancelledWhileQueued_withdrawsEntry_nextClientGetsItAtOnce() = runTest {
        val held = client().lock("queue").acquire()
        val waiterLock = client().lock("queue")
        val waiting = launch(Dispatchers.Default) { waiterLock.acquire(1.minutes) }
        withContext(Dispatchers.IO) { awaitEntries("queue", 2) }
        waiting.cancel()
        waiting.join()
        assertThat(waiting.isCancelled).isTrue()
        withContext(Dispatchers.IO) { awaitEntries("queue", 1) }
        held.close()
        // Had the cancelled waiter stayed in the queue, it would be granted next and a zero wait would fail.
        val third = client().lock("queue").tryAcquire(Duration.ZERO)
        assertThat(third).isNotNull
        third!!.release()
    }

    @Test
    fun withTimeout_aroundAcquire_withdrawsTheAttempt() = runTest {
        val held = client().lock("timeout").acquire()
        val waiterLock = client().lock("timeout")
        // Structured cancellation by a real-time timeout (runTest's withTimeout is virtual: switch dispatcher).
        assertThatThrownBy {
                kotlinx.coroutines.runBlocking { withTimeout(500) { waiterLock.acquire(1.minutes) } }
            }
            .isInstanceOf(TimeoutCancellationException::class.java)
        withContext(Dispatchers.IO) { awaitEntries("timeout", 1) }
        held.close()
        val next = client().lock("timeout").tryAcquire(Duration.ZERO)
        assertThat(next).isNotNull
        next!!.release()
    }

    @Test
    fun acquire_cancelRacesTheGrant_noLeaseLeftBehind() = runTest {
        val holderClient = client()
        val waiterLock = client().lock("race")
        var returned = 0
        repeat(30) {
            val held = holderClient.lock("race").acquire()
            var got: Lease? = null
            val waiting = launch(Dispatchers.Default, start = CoroutineStart.UNDISPATCHED) {
                got = waiterLock.acquire(1.minutes)
            }
            withContext(Dispatchers.IO) { awaitEntries("race", 2) }
            // From half a millisecond before the release is sent to five after, around the grant's arrival.
            val skew = ThreadLocalRandom.current().nextLong(-500, 5000)
            val canceller = launch(Dispatchers.Default) {
                if (skew > 0) spin(skew)
                waiting.cancel()
            }
            if (skew < 0) spin(-skew)
            held.closeAsync()
            canceller.join()
            waiting.join()
            // A coroutine that got its lease before the cancel took effect holds it: its own to close.
            got?.let {
                returned++
                it.release()
            }
            withContext(Dispatchers.IO) { awaitEntries("race", 0) }
        }
        val after = client().lock("race").tryAcquire(Duration.ZERO)
        assertThat(after).isNotNull
        after!!.release()
        println("${backendName()}: coroutine cancel race, $returned of 30 rounds returned the lease")
    }

    private fun spin(micros: Long) {
        val end = System.nanoTime() + micros * 1000
        while (System.nanoTime() < end) Thread.onSpinWait()
    }

    @Test
    fun withLock_concurrentCoroutines_oneInsideAtATime_tokensRise() = runTest {
        val inside = AtomicInteger()
        val maxInside = AtomicInteger()
        val tokens = Collections.synchronizedList(ArrayList<Long>())
        val clients = List(3) { client() }
        withContext(Dispatchers.Default) {
            clients
                .flatMap { c ->
                    List(4) {
                        async {
                            c.withLock("counter", 1.minutes) { lease ->
                                maxInside.accumulateAndGet(inside.incrementAndGet(), Math::max)
                                tokens.add(lease.fencingToken())
                                delay(20) // suspends; the coroutine may resume on another thread
                                inside.decrementAndGet()
                            }
                        }
                    }
                }
                .awaitAll()
        }
        assertThat(maxInside).hasValue(1)
        assertThat(tokens).hasSize(12).isSorted().doesNotHaveDuplicates()
        assertThat(entries("counter")).isEmpty()
    }

    @Test
    fun withLock_returns_releasedBeforeItReturns() = runTest {
        val lock = client().lock("done")
        val other = client().lock("done")
        repeat(3) {
            val token = lock.withLock(5.seconds) { it.fencingToken() }
            assertThat(token).isPositive()
            val next = other.tryAcquire(Duration.ZERO)
            assertThat(next).`as`("the lock is free as soon as withLock returned").isNotNull
            next!!.release()
        }
    }

    @Test
    fun withLock_actionThrows_releasesAndRethrows() = runTest {
        val lock = client().lock("failing")
        var seen: Lease? = null
        val thrown = runCatching {
            lock.withLock(5.seconds) {
                seen = it
                yield()
                throw IllegalStateException("boom")
            }
        }
        assertThat(thrown.exceptionOrNull()).isInstanceOf(IllegalStateException::class.java).hasMessage("boom")
        assertThat(seen!!.isValid).isFalse()
        val next = client().lock("failing").tryAcquire(Duration.ZERO)
        assertThat(next).isNotNull
        next!!.release()
    }

    @Test
    fun withLock_cancelledWhileRunning_releasesBeforeTheJobEnds() = runTest {
        val lock = client().lock("running")
        var seen: Lease? = null
        val job = launch(Dispatchers.Default) {
            lock.withLock(5.seconds) {
                seen = it
                awaitCancellation()
            }
        }
        withContext(Dispatchers.IO) { await().atMost(scaled(5)).until { seen != null } }
        assertThat(entries("running")).hasSize(1)
        job.cancel()
        job.join()
        // The release ran in NonCancellable and finished before the job completed.
        assertThat(seen!!.isValid).isFalse()
        val next = client().lock("running").tryAcquire(Duration.ZERO)
        assertThat(next).isNotNull
        next!!.release()
    }

    @Test
    fun withLock_failedSibling_cancelsTheWaiter_noEntryLeft() = runTest {
        val held = client().lock("sibling").acquire()
        val waiterLock = client().lock("sibling")
        var ran = false
        val failure = runCatching {
            withContext(Dispatchers.Default) {
                coroutineScope {
                    launch { waiterLock.withLock(1.minutes) { ran = true } }
                    launch {
                        withContext(Dispatchers.IO) { awaitEntries("sibling", 2) }
                        throw IllegalStateException("sibling failed")
                    }
                }
            }
        }
        assertThat(failure.exceptionOrNull()).hasMessage("sibling failed")
        assertThat(ran).isFalse()
        withContext(Dispatchers.IO) { awaitEntries("sibling", 1) }
        assertThat(held.isValid).isTrue()
        held.close()
    }

    @Test
    fun semaphore_permits_timeoutNullThenWithPermitsBoundsConcurrency() = runTest {
        val first = client().semaphore("pool", 3)
        val second = client().semaphore("pool", 3)
        val two = first.acquire(2, 5.seconds)
        assertThatThrownBy { kotlinx.coroutines.runBlocking { second.acquire(2, 300.milliseconds) } }
            .isInstanceOf(LockTimeoutException::class.java)
        assertThat(second.tryAcquire(2, Duration.ZERO)).isNull()
        second.tryAcquire(1, Duration.ZERO)!!.release()
        two.release()

        val inside = AtomicInteger()
        val maxInside = AtomicInteger()
        val semaphores = List(3) { client().semaphore("pool", 3) }
        withContext(Dispatchers.Default) {
            semaphores
                .flatMap { s ->
                    List(3) {
                        async {
                            s.withPermits(2, 1.minutes) {
                                maxInside.accumulateAndGet(inside.incrementAndGet(), Math::max)
                                delay(10)
                                inside.decrementAndGet()
                            }
                        }
                    }
                }
                .awaitAll()
        }
        // Two permits each out of three: never two holders at once.
        assertThat(maxInside).hasValue(1)
    }

    @Test
    fun semaphore_cancelledWhileQueued_withdrawsEntry() = runTest {
        val holder = client().semaphore("sem-cancel", 2)
        val waiter = client().semaphore("sem-cancel", 2)
        val all = holder.acquire(2, 5.seconds)
        val waiting = launch(Dispatchers.Default) { waiter.acquire(1, 1.minutes) }
        withContext(Dispatchers.IO) { awaitEntries("sem-cancel", 2) }
        waiting.cancel()
        waiting.join()
        withContext(Dispatchers.IO) { awaitEntries("sem-cancel", 1) }
        assertThat(all.isValid).isTrue()
        all.release()
        holder.tryAcquire(2, Duration.ZERO)!!.release()
    }

    @Test
    fun badInput_throwsAndStartsNothing() = runTest {
        val lock = client().lock("bad")
        val semaphore = client().semaphore("bad-sem", 2)
        assertThat(runCatching { lock.acquire((-1).seconds) }.exceptionOrNull())
            .isInstanceOf(IllegalArgumentException::class.java)
        assertThat(runCatching { semaphore.acquire(3, Duration.ZERO) }.exceptionOrNull())
            .isInstanceOf(IllegalArgumentException::class.java)
        assertThat(entries("bad")).isEmpty()
        assertThat(entries("bad-sem")).isEmpty()
    }

    @Test
    fun acquire_infiniteWait_waitsUntilReleased() = runTest {
        val held = client().lock("forever").acquire()
        val waiterLock = client().lock("forever")
        val waiting = async(Dispatchers.Default) { waiterLock.acquire(Duration.INFINITE) }
        withContext(Dispatchers.IO) { awaitEntries("forever", 2) }
        assertThat(waiting.isActive).isTrue()
        held.close()
        val lease = withContext(Dispatchers.Default) { withTimeout(scaled(10).toMillis()) { waiting.await() } }
        assertThat(lease.fencingToken()).isGreaterThan(held.fencingToken())
        lease.release()
    }

    @Test
    fun acquire_backendDown_throwsLockBackendException() = runTest {
        FaultProxy.start(serverPort()).use { proxy ->
            LockClient.connect(uriVia(proxy.port(), "connectTimeout=1s")).use { client ->
                val lock = client.lock("down")
                lock.acquire(Duration.ZERO).release()
                proxy.refuse()
                proxy.resetConnections()
                val failure = withContext(Dispatchers.Default) {
                    runCatching { lock.withLock(Timing.scale(java.time.Duration.ofSeconds(5)).toKotlin()) { 1 } }
                }
                // Unreachable is not busy: a backend failure, never a timeout or null.
                assertThat(failure.exceptionOrNull())
                    .isInstanceOf(LockBackendException::class.java)
                    .hasMessageContaining("lock 'down' on " + backendName())
                assertThat(
                        withContext(Dispatchers.Default) {
                            runCatching { lock.tryAcquire(1.seconds) }.exceptionOrNull()
                        }
                    )
                    .isInstanceOf(LockBackendException::class.java)
                proxy.pass()
            }
        }
    }

    private fun java.time.Duration.toKotlin(): Duration = toMillis().milliseconds
}

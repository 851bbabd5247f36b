package io.dlock.shedlock;

import io.dlock.Lease;
import io.dlock.LockBackendException;
import io.dlock.LockClient;
import io.dlock.LockInterruptedException;
import io.dlock.LockTimeoutException;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.atomic.AtomicInteger;
import net.javacrumbs.shedlock.core.ExtensibleLockProvider;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.SimpleLock;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A ShedLock {@link ExtensibleLockProvider} on any dlock backend: replace an application's {@code
 * LockProvider} bean with this one and keep every {@code @SchedulerLock}.
 *
 * <pre>{@code
 * @Bean(destroyMethod = "close")
 * LockClient lockClient() {
 *     return LockClient.connect("zookeeper://zk1:2181,zk2:2181/shop");
 * }
 *
 * @Bean
 * LockProvider lockProvider(LockClient lockClient) {
 *     return DLockLockProvider.of(lockClient);
 * }
 * }</pre>
 *
 * <p>ShedLock's semantics, on dlock leases:
 *
 * <ul>
 *   <li>{@link #lock} makes one attempt without waiting ({@code acquireAsync(Duration.ZERO)}); a
 *       lock held elsewhere, by another node or by another task of this one, is an empty result, so
 *       ShedLock skips the run. While this provider holds a name, or its own attempt for it is in
 *       flight, another attempt for that name is answered at once without a backend call. A
 *       backend that cannot be reached is a {@link LockBackendException},
 *       never an empty result: ShedLock passes it to the scheduler, which logs it.
 *   <li>{@code lockAtMostFor}, counted from the {@code lock} call on a monotonic clock: a task that
 *       still runs then loses the lock (the provider releases the lease, which turns invalid). A
 *       holder that dies is released by the backend after its crash bound (the ZooKeeper session
 *       timeout, or {@code leaseTime} on the other backends), whatever {@code lockAtMostFor} says;
 *       until then the client renews the lease.
 *   <li>{@code lockAtLeastFor}, counted from the same point: {@code unlock()} before then keeps the
 *       lease and releases it on this provider's timer thread when that time has passed; the
 *       caller's thread returns at once. After that time, {@code unlock()} releases on the caller's
 *       thread and returns once the backend confirms (at most the client's connect timeout). The lock is kept only as long as this node's client: a node
 *       that shuts down (or dies) releases it at once (or after its crash bound).
 *   <li>{@code extend(lockAtMostFor, lockAtLeastFor)} keeps the same lease (and fencing token) and
 *       moves both deadlines to those durations from now; it returns empty once the lock has expired,
 *       has been lost or has been released. A used lock ({@code unlock}ed or {@code extend}ed) throws
 *       {@link IllegalStateException} on further use, as ShedLock's own locks do. ShedLock's {@code
 *       LockExtender} and {@code KeepAliveLockProvider} work on it.
 *   <li>The task reads its lease with {@link DLockShedLock#currentLease()}: the fencing token and
 *       {@code onLost}. ShedLock's {@code LockAssert.assertLocked()} works as with any provider.
 * </ul>
 *
 * <p>A lock name must be a valid dlock lock name on the client's backend ({@code
 * LockClient#lock(String)}); ShedLock's names (letters, digits, {@code - _ .}) are.
 *
 * <p>The provider does not own the client: close the client after the provider (a Spring
 * application does, as the provider bean depends on the client bean).
 *
 * <p>Thread-safety: safe from any thread; one provider serves every task of the application.
 */
public final class DLockLockProvider implements ExtensibleLockProvider, AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(DLockLockProvider.class);
    private static final AtomicInteger INSTANCES = new AtomicInteger();

    private final LockClient client;
    private final String backend;
    private final ScheduledThreadPoolExecutor timers;
    /**
     * Per lock name, this provider's attempt in flight (an Object) or its grant (the Hold), until the
     * Hold is released. A second attempt for a name already here is answered "held" without a backend
     * call: one node never has two attempts of one lock in flight.
     */
    private final ConcurrentHashMap<String, Object> claims = new ConcurrentHashMap<>();

    private volatile boolean closed;

    private DLockLockProvider(LockClient client) {
        this.client = client;
        this.backend = backendNameOf(client);
        String threadName = "dlock-shedlock-" + INSTANCES.incrementAndGet();
        ScheduledThreadPoolExecutor pool = new ScheduledThreadPoolExecutor(1, r -> {
            Thread t = new Thread(r, threadName);
            t.setDaemon(true);
            return t;
        });
        pool.setRemoveOnCancelPolicy(true);
        pool.setExecuteExistingDelayedTasksAfterShutdownPolicy(false);
        this.timers = pool;
    }

    /**
     * A provider that takes its locks from {@code client}, which stays the caller's to close.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: {@link
     * NullPointerException} for a null client; nothing is created.
     *
     * @param client a client of any backend, from {@link LockClient#connect}
     * @return the provider; {@link #close()} stops its timer thread
     */
    public static DLockLockProvider of(LockClient client) {
        return new DLockLockProvider(Objects.requireNonNull(client, "client"));
    }

    /**
     * Takes the lock {@code configuration.getName()} for this node if no one holds it, with one
     * attempt and no waiting, and binds its lease to the calling thread ({@link
     * DLockShedLock#currentLease()}) until the returned lock's {@code unlock()}.
     *
     * <p>Blocking: one backend round trip (up to the client's request timeout when the backend does
     * not answer), never waiting for a holder. Thread-safety: safe from any thread. On failure: an
     * empty result only when the lock is held elsewhere; a {@link LockBackendException} when the
     * backend cannot be reached or refuses; in both cases nothing is held and no queue entry is left.
     *
     * @param configuration the lock's name, {@code lockAtMostFor} and {@code lockAtLeastFor}; its
     *     {@code createdAt} is not used (both durations count from this call)
     * @return the lock, or empty if another task or node holds it
     * @throws LockBackendException if the backend cannot be reached or refuses
     * @throws LockInterruptedException if the thread is interrupted during the attempt (the flag is
     *     set again); nothing is held
     * @throws IllegalArgumentException if the name is not a valid dlock lock name
     * @throws IllegalStateException if this provider or its client is closed
     */
    @Override
    public Optional<SimpleLock> lock(LockConfiguration configuration) {
        Objects.requireNonNull(configuration, "configuration");
        checkOpen();
        long start = System.nanoTime();
        String name = configuration.getName();
        Object claim = new Object();
        if (claims.putIfAbsent(name, claim) != null) {
            log.debug("[lock={}] held or being taken by this node: run skipped", name);
            return Optional.empty();
        }
        Lease lease;
        try {
            lease = acquire(name);
        } catch (RuntimeException | Error e) {
            claims.remove(name, claim);
            throw e;
        }
        if (lease == null) {
            claims.remove(name, claim);
            log.debug("[lock={}] held elsewhere: run skipped", name);
            return Optional.empty();
        }
        Hold hold = new Hold(lease, timers, h -> claims.remove(name, h));
        claims.replace(name, claim, hold);
        hold.start(start, configuration.getLockAtMostFor(), configuration.getLockAtLeastFor());
        if (closed) {
            hold.releaseNow();
            checkOpen();
        }
        log.debug(
                "[lock={} state={}] granted, token {}, at most {}, at least {}",
                name,
                Hold.State.RUNNING,
                lease.fencingToken(),
                configuration.getLockAtMostFor(),
                configuration.getLockAtLeastFor());
        DLockShedLock.bind(hold);
        return Optional.of(new SimpleLockHandle(hold));
    }

    /** One attempt without waiting: the lease, or null when someone else holds the lock. */
    private @Nullable Lease acquire(String name) {
        CompletableFuture<Lease> pending = client.lock(name).acquireAsync(Duration.ZERO);
        try {
            return pending.get();
        } catch (InterruptedException e) {
            pending.cancel(false); // withdraws the attempt; a grant that raced with it is released
            Thread.currentThread().interrupt();
            throw new LockInterruptedException(name, backend, e);
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof LockTimeoutException) {
                return null;
            }
            if (cause instanceof RuntimeException r) {
                throw r;
            }
            if (cause instanceof Error err) {
                throw err;
            }
            throw new LockBackendException(name, backend, "acquisition failed", cause);
        }
    }

    /**
     * Stops the timer thread and releases every lock this provider still holds: those of tasks that
     * still run (their leases turn invalid) and those kept for {@code lockAtLeastFor}. Later {@link
     * #lock} calls throw {@link IllegalStateException}. The client stays open.
     *
     * <p>Blocking: never (the releases are sent from the client's threads; closing the client waits
     * for them). Thread-safety: safe from any thread; idempotent. On failure: cannot fail; a release
     * the backend does not confirm is retried by the client until its lease runs out.
     */
    @Override
    public void close() {
        closed = true;
        timers.shutdownNow();
        for (Object claim : List.copyOf(claims.values())) {
            if (claim instanceof Hold hold) {
                hold.releaseNow();
            }
        }
    }

    @Override
    public String toString() {
        return "DLockLockProvider[" + backend + ", " + (closed ? "CLOSED" : "OPEN") + ", " + claims.size() + " held]";
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("DLockLockProvider on " + backend + " is closed");
        }
    }

    /** The backend's name as the client's text gives it ({@code "LockClient[redis, OPEN, 0 live]"}). */
    private static String backendNameOf(LockClient c) {
        String s = String.valueOf(c);
        int open = s.indexOf('[');
        int comma = s.indexOf(',', open + 1);
        return s.startsWith("LockClient[") && comma > open ? s.substring(open + 1, comma) : "unknown";
    }
}

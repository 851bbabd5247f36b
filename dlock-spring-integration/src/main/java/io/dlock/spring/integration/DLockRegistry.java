package io.dlock.spring.integration;

import io.dlock.DistributedLock;
import io.dlock.Lease;
import io.dlock.LockBackendException;
import io.dlock.LockClient;
import io.dlock.Ticker;
import io.dlock.core.LockNames;
import java.time.Duration;
import java.util.ConcurrentModificationException;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;
import org.springframework.integration.support.locks.ExpirableLockRegistry;
import org.springframework.integration.support.locks.LockRegistry;
import org.springframework.integration.support.locks.RenewableLockRegistry;

/**
 * A Spring Integration {@link LockRegistry} whose locks are dlock locks: every node that builds one on a
 * {@link LockClient} of the same backend and namespace (and the same {@code prefix}) shares its locks, on
 * ZooKeeper, Redis, SQL, etcd or Memcached. It is an {@link ExpirableLockRegistry} and a {@link
 * RenewableLockRegistry}, and runs on Spring Integration 6.5 and 7.
 *
 * <pre>{@code
 * @Bean
 * DLockRegistry lockRegistry(LockClient client) {
 *     return DLockRegistry.of(client, "orders");
 * }
 * }</pre>
 *
 * <p><b>Locks.</b> {@link #obtain} returns one {@link Lock} per lock name, the same object on every call
 * until {@link #expireUnusedOlderThan} drops it. It is dlock's {@link DistributedLock#asJavaLock()} view:
 * owned by the thread that locked it and reentrant; {@code lock()} and {@code tryLock()} wait through
 * interrupts, {@code lockInterruptibly()} and {@code tryLock(time, unit)} do not; {@code unlock()} by a
 * thread that does not hold it throws {@link IllegalMonitorStateException} and changes nothing; {@code
 * newCondition()} throws {@link UnsupportedOperationException}. A lock lost while held (its lease
 * expired or its connection was lost) makes the outermost {@code unlock()} throw {@link
 * ConcurrentModificationException} after releasing what is left, as Spring Integration's JDBC and Redis
 * locks do. Backend failures are dlock's {@link LockBackendException}, never a timeout or {@code false}.
 *
 * <p><b>Keys.</b> A key maps to the lock name {@code prefix + ":" + key.toString()}, or {@code
 * key.toString()} without a prefix ({@link #lockName}); keys with equal strings share one lock. The
 * name must follow dlock's rules (1 to 200 characters from {@code A-Z a-z 0-9 _ - . :}): a key that
 * breaks them, or whose class has no {@code toString()} of its own (its name would differ in every JVM),
 * is refused with {@link IllegalArgumentException} and nothing is registered.
 *
 * <p><b>Renewal.</b> dlock renews a held lease by itself (every third of {@code leaseTime}, on by
 * default), so {@link #renewLock(Object)} does not extend anything: it checks that the calling thread
 * holds the lock and that its lease is still valid, and throws as Spring Integration's registries do
 * otherwise. {@code setRenewalTaskScheduler} is not needed and does nothing. The fencing token of the
 * current hold is {@link #fencingToken(Object)}.
 *
 * <p>The registry does not own the client: closing the client (the application's job) releases every lock
 * held through it.
 *
 * <p>Thread-safety: safe for use from any thread; many threads may share one registry and its locks.
 */
public final class DLockRegistry implements ExpirableLockRegistry, RenewableLockRegistry {

    /** Caches whether a class declares or inherits a {@code toString()} other than {@link Object#toString()}. */
    private static final ClassValue<Boolean> OWN_TO_STRING = new ClassValue<>() {
        @Override
        protected Boolean computeValue(Class<?> type) {
            try {
                return type.getMethod("toString").getDeclaringClass() != Object.class;
            } catch (NoSuchMethodException e) {
                throw new AssertionError("every class has toString()", e);
            }
        }
    };

    private final LockClient client;
    private final String prefix;
    private final Ticker ticker;
    private final ConcurrentHashMap<String, RegistryLock> locks = new ConcurrentHashMap<>();

    private DLockRegistry(LockClient client, String prefix, Ticker ticker) {
        this.client = Objects.requireNonNull(client, "client");
        this.prefix = checkPrefix(prefix);
        this.ticker = Objects.requireNonNull(ticker, "ticker");
    }

    /**
     * A registry whose lock names are the keys' strings.
     *
     * <p>Blocking: never (nothing is sent). Thread-safety: safe from any thread. On failure: throws; no
     * registry is made.
     *
     * @param client the client whose locks the registry hands out; the caller keeps it open and closes it
     * @return the registry
     * @throws NullPointerException if {@code client} is null
     */
    public static DLockRegistry of(LockClient client) {
        return new DLockRegistry(client, "", Ticker.system());
    }

    /**
     * A registry whose lock names are {@code prefix + ":" + key}, so that registries of different prefixes
     * on one namespace never share a lock (Spring Integration's registry key or region).
     *
     * <p>Blocking: never (nothing is sent). Thread-safety: safe from any thread. On failure: throws; no
     * registry is made.
     *
     * @param client the client whose locks the registry hands out; the caller keeps it open and closes it
     * @param prefix a valid lock name (see the class comment); {@code ""} for none
     * @return the registry
     * @throws IllegalArgumentException if {@code prefix} is not empty and not a valid lock name
     * @throws NullPointerException if an argument is null
     */
    public static DLockRegistry of(LockClient client, String prefix) {
        return new DLockRegistry(client, prefix, Ticker.system());
    }

    /** As {@link #of(LockClient, String)}, with the ticker that times {@link #expireUnusedOlderThan}. */
    static DLockRegistry of(LockClient client, String prefix, Ticker ticker) {
        return new DLockRegistry(client, prefix, ticker);
    }

    private static String checkPrefix(String prefix) {
        Objects.requireNonNull(prefix, "prefix");
        if (!prefix.isEmpty()) {
            try {
                LockNames.validate(prefix);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException(
                        "prefix '" + prefix + "' is not a valid lock name: " + e.getMessage(), e);
            }
        }
        return prefix;
    }

    /**
     * The lock for {@code lockKey}: the same object on every call for keys of the same {@link #lockName},
     * until {@link #expireUnusedOlderThan} drops it while nobody holds it (a later call then returns a new
     * object for the same distributed lock).
     *
     * <p>Blocking: never (nothing is sent; the lock is a handle). Thread-safety: safe from any thread; the
     * lock may be shared by any number of threads, each owning its own holds. On failure: throws; nothing
     * is registered.
     *
     * @param lockKey the key; its {@code toString()} names the lock
     * @return the lock
     * @throws IllegalArgumentException if the key does not map to a valid lock name (see {@link #lockName})
     * @throws NullPointerException if {@code lockKey} is null
     */
    @Override
    public Lock obtain(Object lockKey) {
        String name = lockName(lockKey);
        return locks.compute(name, (n, existing) -> {
            RegistryLock lock = existing != null ? existing : new RegistryLock(client.lock(n), ticker);
            lock.touch();
            return lock;
        });
    }

    /**
     * The dlock lock name a key maps to: {@code prefix + ":" + lockKey.toString()}, or {@code
     * lockKey.toString()} for a registry without a prefix. Use it with {@code dlock inspect} or {@code
     * client.lock(name)} to reach the same lock outside the registry.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: throws; nothing else happens.
     *
     * @param lockKey the key
     * @return the lock name
     * @throws IllegalArgumentException if the key's class has no {@code toString()} of its own (its name
     *     would differ in every JVM), or the name breaks dlock's name rules (the message names the rule)
     * @throws NullPointerException if {@code lockKey} is null
     */
    public String lockName(Object lockKey) {
        Objects.requireNonNull(lockKey, "lockKey");
        if (!OWN_TO_STRING.get(lockKey.getClass())) {
            throw new IllegalArgumentException("lock key of " + lockKey.getClass()
                    + " has no toString() of its own, so its lock name would differ in every JVM:"
                    + " use a String, a number, an enum, a UUID or a record");
        }
        String key = lockKey.toString();
        String name = prefix.isEmpty() ? key : prefix + ":" + key;
        try {
            return LockNames.validate(name);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(
                    "lock key '" + key + "' maps to an invalid lock name '" + name + "': " + e.getMessage(), e);
        }
    }

    /**
     * Drops the lock objects that no thread holds and that were last obtained or acquired more than
     * {@code age} milliseconds ago, so that a registry used with many keys does not grow without end.
     * Dropping changes only which object {@link #obtain} returns next: holds live in the client, so a
     * dropped object that someone still uses keeps working, on the same distributed lock.
     *
     * <p>Blocking: never (nothing is sent). Thread-safety: safe from any thread, concurrently with {@code
     * obtain} and with locking. On failure: cannot fail.
     *
     * @param age milliseconds; 0 or negative drops every lock object nobody holds
     */
    @Override
    public void expireUnusedOlderThan(long age) {
        long ageNanos = TimeUnit.MILLISECONDS.toNanos(Math.max(0, age));
        long now = ticker.read();
        for (String name : locks.keySet()) {
            locks.computeIfPresent(name, (n, lock) -> lock.unusedSince(now, ageNanos) ? null : lock);
        }
    }

    /**
     * Checks that the calling thread holds the lock of {@code lockKey} and that its lease is still valid.
     * dlock renews a held lease by itself, so there is nothing to extend: with renewal on (the default) the
     * lease lives as long as the thread holds the lock and the client can reach the backend; with {@code
     * renewal(false)} it ends {@code leaseTime} after the grant, however often this method is called.
     *
     * <p>Blocking: never (no round trip). Thread-safety: owner thread; safe to call from any thread, which
     * then gets the exception for a lock it does not hold. On failure: throws; the hold is left as it was.
     *
     * @param lockKey the key
     * @throws IllegalMonitorStateException if the calling thread does not hold the lock
     * @throws IllegalStateException if the calling thread holds it but the lock was lost (unlock it)
     * @throws IllegalArgumentException if the key does not map to a valid lock name
     * @throws NullPointerException if {@code lockKey} is null
     */
    @Override
    public void renewLock(Object lockKey) {
        String name = lockName(lockKey);
        if (client.lock(name).isHeldByCurrentThread()) {
            return;
        }
        throw notHeld(name, "renewed");
    }

    /**
     * Spring Integration 7's {@code renewLock(key, ttl)}: checks {@code ttl} and then does what {@link
     * #renewLock(Object)} does. A dlock lease has one length per client ({@code leaseTime}) and is renewed
     * for as long as it is held, so {@code ttl} does not change it.
     *
     * <p>Blocking: never (no round trip). Thread-safety: owner thread, as {@link #renewLock(Object)}. On
     * failure: throws; the hold is left as it was.
     *
     * @param lockKey the key
     * @param ttl the time to live Spring Integration asks for; must be positive
     * @throws IllegalArgumentException if {@code ttl} is zero or negative, or the key maps to no valid name
     * @throws IllegalMonitorStateException if the calling thread does not hold the lock
     * @throws IllegalStateException if the calling thread holds it but the lock was lost
     * @throws NullPointerException if an argument is null
     */
    public void renewLock(Object lockKey, Duration ttl) {
        Objects.requireNonNull(ttl, "ttl");
        if (ttl.isZero() || ttl.isNegative()) {
            throw new IllegalArgumentException("ttl must be positive: " + ttl);
        }
        renewLock(lockKey);
    }

    /**
     * The fencing token of the calling thread's hold of the lock of {@code lockKey}: pass it with every
     * write the lock protects, so that the resource refuses writes of an older holder (see dlock's {@code
     * Lease.fencingToken()}). Nested holds share their outermost hold's token.
     *
     * <p>Blocking: never while the lock is held (the token is read from the hold, no round trip).
     * Thread-safety: owner thread; safe to call from any thread, which then gets the exception for a lock
     * it does not hold. On failure: throws; the hold is left as it was.
     *
     * @param lockKey the key
     * @return the token, strictly greater than every earlier grant's of the same lock name
     * @throws IllegalMonitorStateException if the calling thread does not hold the lock
     * @throws IllegalStateException if the calling thread holds it but the lock was lost
     * @throws IllegalArgumentException if the key does not map to a valid lock name
     * @throws NullPointerException if {@code lockKey} is null
     */
    public long fencingToken(Object lockKey) {
        String name = lockName(lockKey);
        DistributedLock lock = client.lock(name);
        if (!lock.isHeldByCurrentThread()) {
            throw notHeld(name, "asked for its fencing token");
        }
        // A nested hold, taken and given back at once: re-entering a valid hold sends nothing. (Were the
        // lease lost in the few instructions since the check above, the engine would drop the lost hold
        // and try the lock once, and its unlock would then report the loss.)
        boolean interrupted = Thread.interrupted(); // an interrupted thread may still read its token
        try {
            Optional<Lease> nested = lock.tryAcquire(Duration.ZERO);
            if (nested.isEmpty()) {
                throw notHeld(name, "asked for its fencing token");
            }
            try (Lease lease = nested.get()) {
                return lease.fencingToken();
            }
        } catch (InterruptedException e) {
            interrupted = true;
            throw new IllegalStateException("lock '" + name + "': interrupted while reading the fencing token", e);
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private RuntimeException notHeld(String name, String what) {
        RegistryLock lock = locks.get(name);
        Thread me = Thread.currentThread();
        if (lock != null && lock.hasHoldOfCurrentThread()) {
            return new IllegalStateException("lock '" + name + "' cannot be " + what + ": it was lost while thread '"
                    + me.getName() + "' held it (its lease expired or its connection was lost); unlock it");
        }
        return new IllegalMonitorStateException(
                "lock '" + name + "' cannot be " + what + ": thread '" + me.getName() + "' does not hold it");
    }

    @Override
    public String toString() {
        return "DLockRegistry[" + (prefix.isEmpty() ? "" : "prefix=" + prefix + ", ") + "locks=" + locks.size() + ", "
                + client + "]";
    }
}

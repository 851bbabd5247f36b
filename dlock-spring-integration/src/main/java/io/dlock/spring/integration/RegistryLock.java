package io.dlock.spring.integration;

import io.dlock.DistributedLock;
import io.dlock.Ticker;
import java.util.ConcurrentModificationException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;
import org.jspecify.annotations.Nullable;

/**
 * The {@link Lock} a {@link DLockRegistry} hands out for one lock name: dlock's own thread-owned view
 * ({@link DistributedLock#asJavaLock()}) does the locking; this class adds what a registry needs on top,
 * a count of each thread's holds taken through it (so that {@link DLockRegistry#expireUnusedOlderThan}
 * keeps held locks and the outermost {@code unlock} can report a lock lost while held), and the time it
 * was last used.
 *
 * <p>Concurrency: {@code holds} has one entry per thread that holds the lock through this object, written
 * only by that thread (the other threads read it, for expiry). The engine keeps the real holds, per
 * client, name and thread; {@code holds} mirrors the count of the ones taken here. {@code lastUsed} is a
 * plain volatile: a stale reading only delays or advances an expiry, which is harmless because a lock
 * object dropped from the registry keeps working (its state lives in the client, not here).
 *
 * <p>Failure: a hold lost while held (its lease expired or its connection was lost) stays a hold until
 * the thread unlocks it; the outermost {@code unlock} then releases what is left and throws {@link
 * ConcurrentModificationException}, as Spring Integration's JDBC and Redis locks do. A new acquisition
 * by a thread whose hold was lost starts afresh, as the engine does: the lost hold is dropped first.
 *
 * <p>Invariants: an entry in {@code holds} is at least 1; a thread without an entry took no hold through
 * this object (or its holds were lost and dropped).
 */
final class RegistryLock implements Lock {
    private final DistributedLock lock;
    private final Lock view;
    private final Ticker ticker;
    private final ConcurrentHashMap<Thread, Integer> holds = new ConcurrentHashMap<>();
    private volatile long lastUsed;

    RegistryLock(DistributedLock lock, Ticker ticker) {
        this.lock = lock;
        this.view = lock.asJavaLock();
        this.ticker = ticker;
        this.lastUsed = ticker.read();
    }

    String name() {
        return lock.name();
    }

    @Override
    public void lock() {
        beforeAcquire();
        view.lock();
        acquired();
    }

    @Override
    public void lockInterruptibly() throws InterruptedException {
        beforeAcquire();
        view.lockInterruptibly();
        acquired();
    }

    @Override
    public boolean tryLock() {
        beforeAcquire();
        if (!view.tryLock()) {
            return false;
        }
        acquired();
        return true;
    }

    @Override
    public boolean tryLock(long time, TimeUnit unit) throws InterruptedException {
        beforeAcquire();
        if (!view.tryLock(time, unit)) {
            return false;
        }
        acquired();
        return true;
    }

    /** A hold of this thread that was lost is dropped by the engine's next acquisition: forget it here too. */
    private void beforeAcquire() {
        Thread me = Thread.currentThread();
        if (holds.containsKey(me) && !lock.isHeldByCurrentThread()) {
            holds.remove(me);
        }
    }

    private void acquired() {
        holds.merge(Thread.currentThread(), 1, Integer::sum);
        lastUsed = ticker.read();
    }

    @Override
    public void unlock() {
        Thread me = Thread.currentThread();
        Integer count = holds.get(me);
        if (count == null) {
            // Not taken through this object: the engine knows whether the thread holds the name (else IMSE).
            view.unlock();
            return;
        }
        if (count > 1) {
            holds.put(me, count - 1);
            try {
                view.unlock();
            } catch (IllegalMonitorStateException e) {
                holds.remove(me);
                throw lost(e);
            }
            return;
        }
        boolean valid = lock.isHeldByCurrentThread();
        holds.remove(me);
        try {
            view.unlock();
        } catch (IllegalMonitorStateException e) {
            throw lost(e);
        }
        if (!valid) {
            throw lost(null);
        }
    }

    private ConcurrentModificationException lost(@Nullable IllegalMonitorStateException cause) {
        return new ConcurrentModificationException(
                "lock '" + lock.name() + "' was lost while thread '"
                        + Thread.currentThread().getName()
                        + "' held it (its lease expired or its connection was lost): another holder may have"
                        + " been granted it meanwhile, so the work it protected may have overlapped",
                cause);
    }

    @Override
    public Condition newCondition() {
        return view.newCondition();
    }

    /** Whether the calling thread took a hold through this object that it has not unlocked, valid or lost. */
    boolean hasHoldOfCurrentThread() {
        return holds.containsKey(Thread.currentThread());
    }

    /** Marks the lock used now (an {@code obtain}). */
    void touch() {
        lastUsed = ticker.read();
    }

    /** No thread holds it through this object and it was last used more than {@code ageNanos} before {@code now}. */
    boolean unusedSince(long now, long ageNanos) {
        return holds.isEmpty() && now - lastUsed > ageNanos;
    }

    @Override
    public String toString() {
        return "DLockRegistry.Lock[" + lock.name() + (holds.isEmpty() ? "" : ", held") + "]";
    }
}

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
 * <p>Concurrency: {@code holds} has one entry per thread that holds the lock through this object, its
 * map entry and its fields written only by that thread (the other threads read it, for expiry). The engine keeps the real holds, per
 * client, name and thread; {@code holds} mirrors the count of the ones taken here. {@code lastUsed} is a
 * plain volatile: a stale reading only delays or advances an expiry, which is harmless because a lock
 * object dropped from the registry keeps working (its state lives in the client, not here).
 *
 * <p>Failure: a hold lost while held (its lease expired or its connection was lost) stays a hold until
 * the thread unlocks it; the outermost {@code unlock} then releases what is left and throws {@link
 * ConcurrentModificationException}, as Spring Integration's JDBC and Redis locks do. A new acquisition
 * by a thread whose hold was lost drops the lost hold first (the engine does the same) and, once
 * granted, restores the thread's depth, so that a thread that re-locks at every turn (Spring's
 * LockRegistryLeaderInitiator heartbeat) keeps the new grant; its outermost unlock still reports the
 * loss.
 *
 * <p>Invariants: an entry's depth in {@code holds} is at least 1; a thread without an entry took no hold through
 * this object (or its holds were lost and dropped).
 */
final class RegistryLock implements Lock {
    private final DistributedLock lock;
    private final Lock view;
    private final Ticker ticker;
    private final ConcurrentHashMap<Thread, Hold> holds = new ConcurrentHashMap<>();
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
        int lostDepth = beforeAcquire();
        view.lock();
        acquired(lostDepth);
    }

    @Override
    public void lockInterruptibly() throws InterruptedException {
        int lostDepth = beforeAcquire();
        view.lockInterruptibly();
        acquired(lostDepth);
    }

    @Override
    public boolean tryLock() {
        int lostDepth = beforeAcquire();
        if (!view.tryLock()) {
            return false;
        }
        acquired(lostDepth);
        return true;
    }

    @Override
    public boolean tryLock(long time, TimeUnit unit) throws InterruptedException {
        int lostDepth = beforeAcquire();
        if (!view.tryLock(time, unit)) {
            return false;
        }
        acquired(lostDepth);
        return true;
    }

    /**
     * A hold of this thread that was lost is dropped by the engine's next acquisition: forget it here
     * too, and return its depth (0 if there was none), for {@link #acquired(int)} to restore.
     */
    private int beforeAcquire() {
        Thread me = Thread.currentThread();
        Hold hold = holds.get(me);
        if (hold == null || lock.isHeldByCurrentThread()) {
            return 0;
        }
        holds.remove(me);
        return hold.depth;
    }

    /**
     * Counts the new hold. After a lost hold of depth {@code lostDepth}, the lock was granted afresh:
     * re-entering it {@code lostDepth} times (no round trip) gives the thread back the depth it had, so
     * the unlocks it still owes leave the new grant held until the outermost one, as Spring's JDBC
     * registry keeps a re-acquired row; that outermost unlock still reports the loss.
     */
    private void acquired(int lostDepth) {
        Thread me = Thread.currentThread();
        Hold hold = holds.get(me);
        if (hold == null) {
            hold = new Hold();
            int depth = 1;
            for (int i = 0; i < lostDepth && view.tryLock(); i++) {
                depth++;
            }
            hold.depth = depth;
            hold.lost = lostDepth > 0;
            holds.put(me, hold);
        } else {
            hold.depth++;
        }
        lastUsed = ticker.read();
    }

    @Override
    public void unlock() {
        Thread me = Thread.currentThread();
        Hold hold = holds.get(me);
        if (hold == null) {
            // Not taken through this object: the engine knows whether the thread holds the name (else IMSE).
            view.unlock();
            return;
        }
        if (hold.depth > 1) {
            hold.depth--;
            try {
                view.unlock();
            } catch (IllegalMonitorStateException e) {
                holds.remove(me);
                throw lost(e);
            }
            return;
        }
        boolean valid = lock.isHeldByCurrentThread() && !hold.lost;
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

    /** One thread's holds taken through this object; read and written by that thread only. */
    private static final class Hold {
        /** Holds not yet unlocked, at least 1. */
        int depth;
        /** A hold of this series was lost and the lock granted afresh: the outermost unlock reports it. */
        boolean lost;
    }

    @Override
    public String toString() {
        return "DLockRegistry.Lock[" + lock.name() + (holds.isEmpty() ? "" : ", held") + "]";
    }
}

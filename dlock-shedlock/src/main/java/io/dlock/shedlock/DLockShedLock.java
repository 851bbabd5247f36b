package io.dlock.shedlock;

import io.dlock.Lease;
import java.util.ArrayDeque;
import java.util.Iterator;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * The dlock lease of the ShedLock task running on the current thread: its fencing token, its
 * validity and its {@code onLost} listeners.
 *
 * <pre>{@code
 * @Scheduled(cron = "0 0 * * * *")
 * @SchedulerLock(name = "hourly-export", lockAtMostFor = "10m")
 * public void export() {
 *     Lease lease = DLockShedLock.currentLease();
 *     lease.onLost(e -> log.warn("export lost its lock: {}", e.getMessage()));
 *     for (Batch batch : batches()) {
 *         lease.checkValid();                               // stop once the lock is gone
 *         store.write(batch, lease.fencingToken());         // the store refuses older tokens
 *     }
 * }
 * }</pre>
 *
 * <p>{@link DLockLockProvider#lock} binds the lease to the thread that calls it, and the lock's
 * {@code unlock()} unbinds it; ShedLock's executor ({@code @SchedulerLock}, {@code
 * LockingTaskExecutor}) calls both on the task's thread, around the task. Nested tasks (another lock
 * name, taken inside a task) stack: the innermost is current. Work the task hands to other threads
 * should take the {@link Lease} along.
 *
 * <p>The lease stays the same object for the whole task, also across {@code
 * LockExtender.extendActiveLock}. When {@code lockAtMostFor} passes while the task still runs, the
 * provider releases the lease: {@link Lease#isValid()} turns false and {@link Lease#checkValid()}
 * throws, but {@code onLost} listeners do not run (the lease was released, not lost); they run when
 * the backend loses the lock (session expired, lease not renewed in time).
 *
 * <p>Thread-safety: safe from any thread; each thread sees only the leases bound to it.
 */
public final class DLockShedLock {
    private static final ThreadLocal<ArrayDeque<Hold>> HOLDS = new ThreadLocal<>();

    private DLockShedLock() {}

    /**
     * The lease of the innermost ShedLock task running on this thread.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: {@link
     * IllegalStateException} when no lock of a {@link DLockLockProvider} is held by a task on this
     * thread; nothing changes.
     *
     * @return the lease (pass its {@link Lease#fencingToken()} to the resource the task writes)
     * @throws IllegalStateException if no task holding a dlock-shedlock lock runs on this thread
     */
    public static Lease currentLease() {
        return findCurrentLease()
                .orElseThrow(() -> new IllegalStateException("no task holding a dlock-shedlock lock runs on thread "
                        + Thread.currentThread().getName()));
    }

    /**
     * The lease of the innermost ShedLock task running on this thread, if any.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @return the lease, or empty outside a task
     */
    public static Optional<Lease> findCurrentLease() {
        ArrayDeque<Hold> holds = live();
        return holds == null || holds.isEmpty()
                ? Optional.empty()
                : Optional.of(holds.getLast().lease());
    }

    /**
     * The lease of the innermost task on this thread that holds lock {@code lockName}, if any.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @param lockName the lock name, as in {@code @SchedulerLock(name = ...)}
     * @return the lease, or empty if no task on this thread holds that lock
     */
    public static Optional<Lease> findLease(String lockName) {
        ArrayDeque<Hold> holds = live();
        if (holds != null) {
            for (Iterator<Hold> it = holds.descendingIterator(); it.hasNext(); ) {
                Hold h = it.next();
                if (h.name().equals(lockName)) {
                    return Optional.of(h.lease());
                }
            }
        }
        return Optional.empty();
    }

    static void bind(Hold hold) {
        ArrayDeque<Hold> holds = live();
        if (holds == null) {
            holds = new ArrayDeque<>(4);
            HOLDS.set(holds);
        }
        holds.addLast(hold);
    }

    static void forget(Hold hold) {
        ArrayDeque<Hold> holds = HOLDS.get();
        if (holds != null) {
            holds.removeIf(h -> h == hold);
            if (holds.isEmpty()) {
                HOLDS.remove();
            }
        }
    }

    /** This thread's holds without those whose task ended (unlocked from another thread). */
    private static @Nullable ArrayDeque<Hold> live() {
        ArrayDeque<Hold> holds = HOLDS.get();
        if (holds != null && holds.removeIf(Hold::taskEnded) && holds.isEmpty()) {
            HOLDS.remove();
            return null;
        }
        return holds;
    }
}

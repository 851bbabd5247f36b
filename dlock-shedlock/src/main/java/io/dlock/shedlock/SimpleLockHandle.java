package io.dlock.shedlock;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import net.javacrumbs.shedlock.core.ClockProvider;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.SimpleLock;

/**
 * What ShedLock holds for one grant: usable once, for {@code unlock()} or {@code extend(...)}, as
 * ShedLock's own {@code AbstractSimpleLock} is (a second use is an {@link IllegalStateException});
 * a successful {@code extend} returns a fresh handle on the same {@link Hold}.
 *
 * <p>Thread-safety: safe from any thread; the one-use check is a compare-and-set.
 */
final class SimpleLockHandle implements SimpleLock {
    private final Hold hold;
    private final AtomicBoolean used = new AtomicBoolean();

    SimpleLockHandle(Hold hold) {
        this.hold = hold;
    }

    @Override
    public void unlock() {
        use();
        try {
            hold.unlock();
        } finally {
            DLockShedLock.forget(hold);
        }
    }

    @Override
    public Optional<SimpleLock> extend(Duration lockAtMostFor, Duration lockAtLeastFor) {
        // ShedLock's own checks and messages (lockAtLeastFor > lockAtMostFor, negative); nothing changes.
        new LockConfiguration(ClockProvider.now(), hold.name(), lockAtMostFor, lockAtLeastFor);
        use();
        if (hold.extend(lockAtMostFor, lockAtLeastFor)) {
            return Optional.of(new SimpleLockHandle(hold));
        }
        DLockShedLock.forget(hold);
        return Optional.empty();
    }

    private void use() {
        if (!used.compareAndSet(false, true)) {
            throw new IllegalStateException(
                    "Lock " + hold.name() + " is not valid, it has already been unlocked or extended");
        }
    }

    @Override
    public String toString() {
        return "SimpleLock[" + hold.name() + ", token " + hold.lease().fencingToken() + "]";
    }
}

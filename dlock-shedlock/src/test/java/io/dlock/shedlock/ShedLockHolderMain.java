package io.dlock.shedlock;

import io.dlock.LockClient;
import java.time.Duration;
import net.javacrumbs.shedlock.core.ClockProvider;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.SimpleLock;

/**
 * A node that takes a ShedLock lock through {@link DLockLockProvider}, prints {@code LOCKED <token>}
 * and runs its "task" until killed. Arguments: the dlock URI, the lock name, lockAtMostFor (ISO-8601).
 */
public final class ShedLockHolderMain {
    private ShedLockHolderMain() {}

    public static void main(String[] args) throws Exception {
        LockClient client = LockClient.connect(args[0]);
        DLockLockProvider provider = DLockLockProvider.of(client);
        SimpleLock lock = provider.lock(
                        new LockConfiguration(ClockProvider.now(), args[1], Duration.parse(args[2]), Duration.ZERO))
                .orElseThrow(() -> new IllegalStateException("lock " + args[1] + " is held"));
        System.out.println("LOCKED " + DLockShedLock.currentLease().fencingToken());
        System.out.flush();
        Thread.sleep(Long.MAX_VALUE);
        lock.unlock();
    }
}

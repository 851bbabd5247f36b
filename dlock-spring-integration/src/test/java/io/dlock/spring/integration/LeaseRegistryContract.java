package io.dlock.spring.integration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.dlock.LockOptions;
import java.time.Duration;
import java.util.ConcurrentModificationException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;
import org.junit.jupiter.api.Test;

/**
 * {@link RegistryContract} plus what a lease-based backend (Redis, SQL, etcd, Memcached) adds: a lease
 * that runs out while held, as Spring Integration's registries test a lock whose time to live passed.
 */
abstract class LeaseRegistryContract extends RegistryContract {

    @Test
    void leaseRunsOutWhileHeld_renewLockThrows_otherNodeGetsIt_unlockThrowsConcurrentModification() throws Exception {
        DLockRegistry expiring = DLockRegistry.of(
                client(LockOptions.builder()
                        .leaseTime(Duration.ofSeconds(1))
                        .renewal(false)
                        .build()),
                "reg");
        DLockRegistry other = registry();
        Lock lock = expiring.obtain("foo");
        lock.lock();
        expiring.renewLock("foo");
        assertThat(expiring.fencingToken("foo")).isPositive();

        await().pollInSameThread() // renewLock answers for the calling thread, the owner
                .atMost(scaled(15_000))
                .untilAsserted(() -> assertThatThrownBy(() -> expiring.renewLock("foo"))
                        .isExactlyInstanceOf(IllegalStateException.class)
                        .hasMessageContaining("lost"));
        assertThatThrownBy(() -> expiring.fencingToken("foo")).isExactlyInstanceOf(IllegalStateException.class);
        assertThat(onOtherThread(() -> {
                    Lock l = other.obtain("foo");
                    boolean got = l.tryLock(scaled(15_000).toMillis(), TimeUnit.MILLISECONDS);
                    if (got) {
                        l.unlock();
                    }
                    return got;
                }))
                .as("another node is granted the lock once the lease ran out")
                .isTrue();

        assertThatExceptionOfType(ConcurrentModificationException.class)
                .isThrownBy(lock::unlock)
                .withMessageContaining("reg:foo");
        assertThatExceptionOfType(IllegalMonitorStateException.class).isThrownBy(lock::unlock);
        assertThat(lock.tryLock())
                .as("a fresh hold after the lost one is dropped")
                .isTrue();
        lock.unlock();
    }

    /**
     * What Spring's LockRegistryLeaderInitiator does at each heartbeat: tryLock again, then unlock once.
     * After a loss with nobody else waiting, the owner is granted the lock afresh and keeps it through
     * that unlock; its outermost unlock reports the loss.
     */
    @Test
    void leaseRunsOutWhileHeld_ownerLocksAgain_keepsNewGrantUntilOutermostUnlock() throws Exception {
        DLockRegistry expiring = DLockRegistry.of(
                client(LockOptions.builder()
                        .leaseTime(Duration.ofSeconds(1))
                        .renewal(false)
                        .build()),
                "reg");
        DLockRegistry other = registry();
        Lock lock = expiring.obtain("leader");
        lock.lock();
        long first = expiring.fencingToken("leader");
        await().pollInSameThread().atMost(scaled(15_000)).untilAsserted(() -> assertThatThrownBy(
                        () -> expiring.renewLock("leader"))
                .isExactlyInstanceOf(IllegalStateException.class));

        assertThat(lock.tryLock(scaled(15_000).toMillis(), TimeUnit.MILLISECONDS))
                .isTrue();
        assertThat(expiring.fencingToken("leader")).as("a new grant").isGreaterThan(first);
        lock.unlock();
        assertThat(tryLockOnOtherThread(other.obtain("leader")))
                .as("still held after the heartbeat's unlock")
                .isFalse();
        assertThatExceptionOfType(ConcurrentModificationException.class).isThrownBy(lock::unlock);
        assertThat(onOtherThread(() -> {
                    Lock l = other.obtain("leader");
                    boolean got = l.tryLock(scaled(15_000).toMillis(), TimeUnit.MILLISECONDS);
                    if (got) {
                        l.unlock();
                    }
                    return got;
                }))
                .as("released by the outermost unlock")
                .isTrue();
    }
}

package io.dlock.benchmarks;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import java.util.concurrent.ExecutionException;

/**
 * jetcd's {@code Lock} client used the way jetcd shows it (its {@code LockTest} grants a lease and
 * locks with it; {@code Lock.lock}'s javadoc has the lease stand for one acquisition, "locking
 * twice with the same lease is a no-op") and as applications usually write it: every acquire
 * grants a lease, locks with it, and the release unlocks and revokes that lease. That is four
 * writes per cycle in etcd (lease grant, v3lock's put, delete, lease revoke), each fsync'd. No
 * keep-alive stream: the benchmark's holds are far shorter than the TTL, so leaving it out only
 * makes this anchor faster than an application that keeps its leases alive.
 *
 * <p>{@link JetcdLockAdapter} is the other way (one long-lived lease per thread, two writes per
 * cycle): jetcd's {@code Lock} at its fastest.
 *
 * <p>Thread-safety: safe from any thread; each acquisition has a lease of its own, so threads of
 * one client exclude each other.
 */
final class JetcdLeaseLockAdapter implements BenchClient {
    private static final String PREFIX = "jetcd-lease-bench/";

    private final Client client;

    JetcdLeaseLockAdapter(String address) {
        client = JetcdLockAdapter.client(address);
        try {
            // fail now if the server is not there
            long probe = grant();
            JetcdLockAdapter.await(client.getLeaseClient().revoke(probe), "lease revoke");
        } catch (RuntimeException e) {
            client.close();
            throw e;
        }
    }

    private long grant() {
        return JetcdLockAdapter.await(client.getLeaseClient().grant(JetcdLockAdapter.LEASE_SECONDS), "lease grant")
                .getID();
    }

    @Override
    public BenchLock lock(String name) {
        ByteSequence key = JetcdLockAdapter.bytes(PREFIX + name);
        return () -> {
            long lease = grant();
            ByteSequence owned;
            try {
                owned = client.getLockClient().lock(key, lease).get().getKey();
            } catch (ExecutionException e) {
                JetcdLockAdapter.await(client.getLeaseClient().revoke(lease), "lease revoke");
                throw new IllegalStateException("lock " + name + " failed: " + e.getCause(), e.getCause());
            } catch (InterruptedException e) {
                // Not waited for (the thread is interrupted); its key, if the lock landed, goes with it.
                java.util.concurrent.CompletableFuture<?> unused =
                        client.getLeaseClient().revoke(lease);
                throw e;
            }
            return () -> {
                try {
                    JetcdLockAdapter.await(client.getLockClient().unlock(owned), "unlock of " + name);
                } finally {
                    JetcdLockAdapter.await(client.getLeaseClient().revoke(lease), "lease revoke");
                }
            };
        };
    }

    @Override
    public void close() {
        client.close();
    }
}

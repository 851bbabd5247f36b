package io.dlock.benchmarks;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.op.Cmp;
import io.etcd.jetcd.op.CmpTarget;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.PutOption;
import io.etcd.jetcd.support.CloseableClient;

/**
 * The least a lease-based lock on etcd sends per uncontended cycle, on one jetcd client: a
 * transaction "the key has no create revision (absent) → put it attached to the client's lease"
 * to acquire (one write, whose create revision would be the fencing token), a delete to release
 * (one write). Both wait for etcd's WAL fsync, as every write does. Waiters would have to poll, so
 * it runs only in W1 and COST.
 *
 * <p>Thread-safety: safe from any thread, as jetcd's client is.
 */
final class EtcdFloorAdapter implements BenchClient {
    private static final String PREFIX = "floor-bench/";
    private static final ByteSequence VALUE = JetcdLockAdapter.bytes("x");

    private final Client client;
    private final long lease;
    private final CloseableClient keepAlive;

    EtcdFloorAdapter(String address) {
        client = JetcdLockAdapter.client(address);
        try {
            lease = JetcdLockAdapter.await(client.getLeaseClient().grant(JetcdLockAdapter.LEASE_SECONDS), "lease grant")
                    .getID();
            keepAlive = JetcdLockAdapter.keepAlive(client, lease);
        } catch (RuntimeException e) {
            client.close();
            throw e;
        }
    }

    @Override
    public BenchLock lock(String name) {
        ByteSequence key = JetcdLockAdapter.bytes(PREFIX + name);
        Cmp absent = new Cmp(key, Cmp.Op.EQUAL, CmpTarget.createRevision(0));
        Op put = Op.put(key, VALUE, PutOption.builder().withLeaseId(lease).build());
        return () -> {
            while (!JetcdLockAdapter.await(
                            client.getKVClient().txn().If(absent).Then(put).commit(), "put of " + name)
                    .isSucceeded()) {
                if (Thread.interrupted()) {
                    throw new InterruptedException("interrupted while polling " + name);
                }
                Thread.onSpinWait(); // only reached under contention, which the floor never sees
            }
            return () -> JetcdLockAdapter.await(client.getKVClient().delete(key), "delete of " + name);
        };
    }

    @Override
    public void close() {
        try {
            keepAlive.close();
        } finally {
            client.close();
        }
    }
}

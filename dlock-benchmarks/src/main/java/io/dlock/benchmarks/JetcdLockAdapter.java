package io.dlock.benchmarks;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.lease.LeaseKeepAliveResponse;
import io.etcd.jetcd.support.CloseableClient;
import io.grpc.stub.StreamObserver;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;

/**
 * jetcd's own {@code Lock} client ({@code client.getLockClient().lock(name, lease)}, then {@code
 * unlock(key)}): etcd's server-side v3lock recipe, which puts {@code <name>/<lease hex>} in a
 * transaction, and waits inside the server for the keys created before it to go. v3lock names a
 * holder's key after its lease, so two threads on one lease would share one key and both hold the
 * lock: each thread gets a lease of its own (granted on its first acquire, kept alive by jetcd's
 * keep-alive stream, as an application would do), and a thread's acquisitions do not nest.
 *
 * <p>Thread-safety: safe from any thread; a lock is released by the thread that took it, as every
 * workload does.
 */
final class JetcdLockAdapter implements BenchClient {
    /** The lease TTL of every etcd adapter here: dlock-etcd's default lease time. */
    static final long LEASE_SECONDS = 30;

    private static final String PREFIX = "jetcd-bench/";

    private final Client client;
    private final List<CloseableClient> keepAlives = new CopyOnWriteArrayList<>();
    private final ThreadLocal<Long> leases = ThreadLocal.withInitial(this::grant);

    JetcdLockAdapter(String address) {
        client = client(address);
        try {
            leases.get(); // fail now if the server is not there
        } catch (RuntimeException e) {
            close();
            throw e;
        }
    }

    static Client client(String address) {
        return Client.builder().endpoints("http://" + address).build();
    }

    static ByteSequence bytes(String s) {
        return ByteSequence.from(s, StandardCharsets.UTF_8);
    }

    /** Waits for a reply; interrupts are kept (the flag set again) and reported as unchecked. */
    static <T> T await(CompletableFuture<T> reply, String what) {
        try {
            return reply.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for " + what, e);
        } catch (ExecutionException e) {
            throw new IllegalStateException(what + " failed: " + e.getCause(), e.getCause());
        }
    }

    /** jetcd's keep-alive stream for {@code lease}; a failed keep-alive is the workload's to notice. */
    static CloseableClient keepAlive(Client client, long lease) {
        return client.getLeaseClient().keepAlive(lease, new StreamObserver<LeaseKeepAliveResponse>() {
            @Override
            public void onNext(LeaseKeepAliveResponse value) {}

            @Override
            public void onError(Throwable t) {}

            @Override
            public void onCompleted() {}
        });
    }

    private Long grant() {
        long id = await(client.getLeaseClient().grant(LEASE_SECONDS), "lease grant")
                .getID();
        keepAlives.add(keepAlive(client, id));
        return id;
    }

    @Override
    public BenchLock lock(String name) {
        ByteSequence key = bytes(PREFIX + name);
        return () -> {
            long lease = leases.get();
            ByteSequence owned;
            try {
                owned = client.getLockClient().lock(key, lease).get().getKey();
            } catch (ExecutionException e) {
                throw new IllegalStateException("lock " + name + " failed: " + e.getCause(), e.getCause());
            }
            return () -> await(client.getLockClient().unlock(owned), "unlock of " + name);
        };
    }

    @Override
    public void close() {
        try {
            for (CloseableClient k : keepAlives) {
                k.close();
            }
        } finally {
            client.close();
        }
    }
}

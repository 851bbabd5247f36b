package io.dlock.benchmarks;

import io.dlock.DistributedLock;
import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.LockOptions;

/**
 * dlock through its public API: {@code LockClient.connect(uri)}, {@code lock(name).acquire()},
 * {@code lease.close()}.
 *
 * <p>Thread-safety: safe from any thread, as {@link LockClient} is.
 */
final class DlockAdapter implements BenchClient {
    /** The znode or key namespace of the benchmark's dlock locks. */
    static final String NAMESPACE = "dlock-bench";

    private final LockClient client;

    private DlockAdapter(LockClient client) {
        this.client = client;
    }

    static DlockAdapter zookeeper(String address, LockOptions options) {
        return connect("zookeeper://" + address + "/" + NAMESPACE, options);
    }

    static DlockAdapter redis(String address, LockOptions options) {
        return connect("redis://" + address + "?keyPrefix=" + NAMESPACE, options);
    }

    static DlockAdapter memcached(String address, LockOptions options) {
        return connect("memcached://" + address + "?keyPrefix=" + NAMESPACE, options);
    }

    /** dlock-jdbc on its own connections (at most 4, plus PostgreSQL's LISTEN one), table {@code dlock_bench}. */
    static DlockAdapter jdbc(String jdbcUrl, LockOptions options) {
        return connect(
                jdbcUrl + (jdbcUrl.contains("?") ? "&" : "?") + "dlockTable=dlock_bench&createTable=true", options);
    }

    static DlockAdapter connect(String uri, LockOptions options) {
        return new DlockAdapter(LockClient.connect(uri, options));
    }

    @Override
    public BenchLock lock(String name) {
        DistributedLock lock = client.lock(name);
        return () -> {
            Lease lease = lock.acquire();
            return lease::close;
        };
    }

    @Override
    public void close() {
        client.close();
    }
}

/**
 * The dlock public API: distributed locks over ZooKeeper, Redis, SQL, etcd and Memcached.
 *
 * <p>Backends are found at run time through {@link io.dlock.LockClientProvider}.
 */
module io.dlock {
    exports io.dlock;

    uses io.dlock.LockClientProvider;
}

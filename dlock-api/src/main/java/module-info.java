/**
 * The dlock public API: distributed locks over ZooKeeper, Redis, SQL, etcd and Memcached.
 *
 * <p>Backends are found at run time through {@link io.dlock.LockClientProvider}.
 */
module io.dlock {
    requires static transitive org.jspecify;

    exports io.dlock;

    uses io.dlock.LockClientProvider;
}

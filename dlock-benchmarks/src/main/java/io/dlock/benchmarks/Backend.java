package io.dlock.benchmarks;

import java.util.Locale;

/** A coordination server the runner starts. */
public enum Backend {
    /** A standalone ZooKeeper in its own JVM ({@code ZooKeeperProcess}). */
    ZOOKEEPER,
    /** A {@code redis-server} process. */
    REDIS,
    /** A {@code memcached} process. */
    MEMCACHED,
    /** A PostgreSQL 15 server (the testkit's {@code PostgresServer}, fsync and synchronous commit on). */
    POSTGRESQL,
    /** A MariaDB server (the testkit's {@code MariaDbServer}). */
    MARIADB,
    /** A one-member {@code etcd} (the testkit's {@code EtcdServer}; every write waits for a WAL fsync). */
    ETCD;

    /**
     * The name used on the command line and in the output.
     *
     * @return for example {@code zookeeper}
     */
    public String label() {
        return name().toLowerCase(Locale.ROOT);
    }
}

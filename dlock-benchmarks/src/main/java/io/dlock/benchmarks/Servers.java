package io.dlock.benchmarks;

import org.jspecify.annotations.Nullable;

/**
 * Where the servers of one run listen.
 *
 * @param zookeeper the ZooKeeper connect string ({@code 127.0.0.1:PORT}), or null if not started
 * @param redis the Redis address ({@code 127.0.0.1:PORT}), or null if not started
 * @param memcached the memcached address ({@code 127.0.0.1:PORT}), or null if not started
 * @param postgresql the PostgreSQL JDBC URL with credentials, or null if not started
 * @param mariadb the MariaDB JDBC URL with credentials, or null if not started
 * @param etcd the etcd client address ({@code 127.0.0.1:PORT}), or null if not started
 */
public record Servers(
        @Nullable String zookeeper,
        @Nullable String redis,
        @Nullable String memcached,
        @Nullable String postgresql,
        @Nullable String mariadb,
        @Nullable String etcd) {

    /**
     * Servers without etcd.
     *
     * @param zookeeper the ZooKeeper connect string, or null
     * @param redis the Redis address, or null
     * @param memcached the memcached address, or null
     * @param postgresql the PostgreSQL JDBC URL, or null
     * @param mariadb the MariaDB JDBC URL, or null
     */
    public Servers(
            @Nullable String zookeeper,
            @Nullable String redis,
            @Nullable String memcached,
            @Nullable String postgresql,
            @Nullable String mariadb) {
        this(zookeeper, redis, memcached, postgresql, mariadb, null);
    }

    /**
     * Servers without the SQL databases.
     *
     * @param zookeeper the ZooKeeper connect string, or null
     * @param redis the Redis address, or null
     * @param memcached the memcached address, or null
     */
    public Servers(@Nullable String zookeeper, @Nullable String redis, @Nullable String memcached) {
        this(zookeeper, redis, memcached, null, null);
    }

    /**
     * Servers without memcached.
     *
     * @param zookeeper the ZooKeeper connect string, or null
     * @param redis the Redis address, or null
     */
    public Servers(@Nullable String zookeeper, @Nullable String redis) {
        this(zookeeper, redis, null, null, null);
    }

    /**
     * The address for {@code backend}.
     *
     * <p>Blocking: never. Thread-safety: immutable. On failure: {@link IllegalStateException} if
     * that server was not started.
     *
     * @param backend the backend
     * @return host and port
     */
    public String address(Backend backend) {
        String a =
                switch (backend) {
                    case ZOOKEEPER -> zookeeper;
                    case REDIS -> redis;
                    case MEMCACHED -> memcached;
                    case POSTGRESQL -> postgresql;
                    case MARIADB -> mariadb;
                    case ETCD -> etcd;
                };
        if (a == null) {
            throw new IllegalStateException(backend.label() + " server was not started in this run");
        }
        return a;
    }
}

package io.dlock.benchmarks;

/**
 * Where the servers of one run listen.
 *
 * @param zookeeper the ZooKeeper connect string ({@code 127.0.0.1:PORT}), or null if not started
 * @param redis the Redis address ({@code 127.0.0.1:PORT}), or null if not started
 * @param memcached the memcached address ({@code 127.0.0.1:PORT}), or null if not started
 */
public record Servers(String zookeeper, String redis, String memcached) {

    /**
     * Servers without memcached.
     *
     * @param zookeeper the ZooKeeper connect string, or null
     * @param redis the Redis address, or null
     */
    public Servers(String zookeeper, String redis) {
        this(zookeeper, redis, null);
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
                };
        if (a == null) {
            throw new IllegalStateException(backend.label() + " server was not started in this run");
        }
        return a;
    }
}

package io.dlock.cli.internal.torture;

import java.util.Locale;

/**
 * Chooses the {@link BackendTarget} for a {@code --uri}: {@code embedded} (or {@code
 * embedded:zookeeper}, {@code embedded:redis}) starts a server for the run; a ZooKeeper URI targets
 * an existing server.
 * Adding a backend means one case in each switch.
 *
 * <p>Thread-safety: stateless.
 */
public final class BackendTargets {

    /** The {@code --uri} value that makes the torture start its own server. */
    public static final String EMBEDDED = "embedded";

    private BackendTargets() {}

    /**
     * Checks a {@code --uri} without starting anything.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: {@link
     * IllegalArgumentException} naming what is wrong and what is supported.
     *
     * @param uri the option's value
     * @throws IllegalArgumentException if no target supports it
     */
    public static void validate(String uri) {
        String backend = backendOf(uri);
        if (!ownsServer(uri) && backend.equals("zookeeper")) {
            ZooKeeperTarget.parse(uri.trim());
        }
    }

    /**
     * Returns whether the target for {@code uri} can restart its server.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: {@link
     * IllegalArgumentException} as for {@link #validate(String)}.
     *
     * @param uri the option's value
     * @return true for embedded servers
     */
    public static boolean ownsServer(String uri) {
        backendOf(uri);
        return uri.trim().toLowerCase(Locale.ROOT).startsWith(EMBEDDED);
    }

    /**
     * Opens the target: starts an embedded server, or checks an external URI.
     *
     * <p>Blocking: until an embedded server serves (seconds). Thread-safety: safe from any thread.
     * On failure: {@link IllegalArgumentException} for an unsupported URI, {@link
     * IllegalStateException} if the server does not start; nothing is left running.
     *
     * @param uri {@code embedded}, {@code embedded:zookeeper} or {@code zookeeper://host:port/path}
     * @return the target; close it when done
     */
    static BackendTarget open(String uri) {
        String backend = backendOf(uri);
        boolean embedded = ownsServer(uri);
        return switch (backend) {
            case "zookeeper" -> embedded ? ZooKeeperTarget.embedded() : ZooKeeperTarget.external(uri.trim());
            case "zookeeper-ensemble" -> ZooKeeperEnsembleTarget.embedded();
            case "redis" -> RedisTarget.embedded();
            case "redis-volatile" -> RedisTarget.volatileServer();
            case "redis-sentinel" -> RedisSentinelTarget.embedded(0);
            case "redis-sentinel-wait" -> RedisSentinelTarget.embedded(1);
            case "etcd" -> EtcdTarget.embedded();
            case "postgres" -> PostgresTarget.embedded();
            case "mariadb" -> MariaDbTarget.embedded(false);
            case "mariadb-session" -> MariaDbTarget.embedded(true);
            case "memcached" -> MemcachedTarget.embedded();
            default -> throw new IllegalArgumentException("no torture target for backend " + backend);
        };
    }

    private static String backendOf(String uri) {
        String u = uri == null ? "" : uri.trim().toLowerCase(Locale.ROOT);
        if (u.equals(EMBEDDED) || u.equals(EMBEDDED + ":zookeeper")) {
            return "zookeeper";
        }
        if (u.startsWith("zookeeper://")) {
            return "zookeeper";
        }
        if (u.equals(EMBEDDED + ":zookeeper-ensemble")) {
            return "zookeeper-ensemble";
        }
        if (u.equals(EMBEDDED + ":redis")) {
            return "redis";
        }
        if (u.equals(EMBEDDED + ":redis-volatile")) {
            return "redis-volatile";
        }
        if (u.equals(EMBEDDED + ":redis-sentinel")) {
            return "redis-sentinel";
        }
        if (u.equals(EMBEDDED + ":redis-sentinel-wait")) {
            return "redis-sentinel-wait";
        }
        if (u.equals(EMBEDDED + ":etcd")) {
            return "etcd";
        }
        if (u.equals(EMBEDDED + ":postgres")) {
            return "postgres";
        }
        if (u.equals(EMBEDDED + ":mariadb")) {
            return "mariadb";
        }
        if (u.equals(EMBEDDED + ":mariadb-session")) {
            return "mariadb-session";
        }
        if (u.equals(EMBEDDED + ":memcached")) {
            return "memcached";
        }
        throw new IllegalArgumentException("unsupported --uri '" + uri + "': use 'embedded' (a ZooKeeper the"
                + " torture starts), 'embedded:zookeeper', 'embedded:zookeeper-ensemble' (3 ZooKeeper servers the"
                + " torture starts), 'embedded:redis' (a redis-server the torture starts), 'embedded:redis-volatile'"
                + " (the same without persistence: a restart loses every key), 'embedded:redis-sentinel' (a"
                + " master, a replica and a Sentinel; server-restart is a failover; no partition),"
                + " 'embedded:redis-sentinel-wait' (the same, clients with waitReplicas=1),"
                + " 'embedded:etcd' (an etcd the torture starts), 'embedded:postgres' (a PostgreSQL the torture"
                + " starts), 'embedded:mariadb' (a MariaDB the torture starts), 'embedded:mariadb-session' (the same,"
                + " clients in mode=session), 'embedded:memcached' (a memcached the"
                + " torture starts)"
                + " or 'zookeeper://host:port[/path]'");
    }
}

package io.dlock.redis;

import io.dlock.LockOptions;
import io.dlock.spi.BackendUri;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * A Redis URI taken apart:
 *
 * <ul>
 *   <li>{@code redis://[user:password@]host[:6379][/db]} and {@code rediss://…} (TLS);
 *   <li>{@code redis-sentinel://[user:password@]host[:26379][,host:port]/[db]?master=name};
 *   <li>{@code redis-cluster://[user:password@]host:port[,host:port]}.
 * </ul>
 *
 * <p>Backend parameters: {@code keyPrefix} (default {@value #DEFAULT_KEY_PREFIX}), {@code master}
 * (Sentinel only, required), {@code tls} ({@code true} turns on TLS for Sentinel and Cluster; {@code
 * rediss://} implies it), {@code verifyPeer} ({@code full} default, {@code ca} or {@code none}),
 * {@code waitReplicas} (default 0: after each grant and renewal, wait until this many replicas
 * acknowledged it, with Redis {@code WAIT}) and {@code waitTimeout} (default 1s: how long that
 * wait may take before the grant is given back and the acquire fails).
 *
 * @param mode standalone, Sentinel or Cluster
 * @param hosts the hosts with their ports
 * @param database the database number (standalone and Sentinel)
 * @param user the ACL user, or null for password-only or no authentication
 * @param password the password, or null
 * @param keyPrefix the prefix of every key and channel dlock uses
 * @param master the Sentinel master name, or null
 * @param tls whether connections use TLS
 * @param verifyPeer how TLS peers are verified: {@code full}, {@code ca} or {@code none}
 * @param waitReplicas how many replicas must acknowledge a grant or renewal (0: none)
 * @param waitTimeout how long to wait for those acknowledgements
 * @param options the client's options
 */
record RedisUri(
        Mode mode,
        List<HostPort> hosts,
        int database,
        @Nullable String user,
        @Nullable String password,
        String keyPrefix,
        @Nullable String master,
        boolean tls,
        String verifyPeer,
        int waitReplicas,
        java.time.Duration waitTimeout,
        LockOptions options) {

    static final String DEFAULT_KEY_PREFIX = "dlock";
    static final int DEFAULT_PORT = 6379;
    static final int DEFAULT_SENTINEL_PORT = 26379;

    /** The backend's own URI parameters. */
    static final Set<String> PARAMETERS =
            Set.of("keyPrefix", "master", "tls", "verifyPeer", "waitReplicas", "waitTimeout");

    /** The most replicas {@code waitReplicas} may ask for. */
    static final int MAX_WAIT_REPLICAS = 64;

    /** How the server is deployed. */
    enum Mode {
        /** One server (possibly a replica set behind a proxy). */
        STANDALONE,
        /** A master found through Sentinels. */
        SENTINEL,
        /** A Redis Cluster. */
        CLUSTER
    }

    /** One host and port. */
    record HostPort(String host, int port) {
        @Override
        public String toString() {
            return host.contains(":") ? "[" + host + "]:" + port : host + ":" + port;
        }
    }

    static RedisUri from(BackendUri uri) {
        Mode mode =
                switch (uri.scheme()) {
                    case "redis", "rediss" -> Mode.STANDALONE;
                    case "redis-sentinel" -> Mode.SENTINEL;
                    case "redis-cluster" -> Mode.CLUSTER;
                    default -> throw new IllegalArgumentException("not a redis URI scheme: '" + uri.scheme() + "'");
                };
        int defaultPort = mode == Mode.SENTINEL ? DEFAULT_SENTINEL_PORT : DEFAULT_PORT;
        List<HostPort> hosts = new ArrayList<>();
        for (String hp : uri.authority().split(",", -1)) {
            hosts.add(hostPort(hp.trim(), defaultPort, uri));
        }
        if (mode == Mode.STANDALONE && hosts.size() > 1) {
            throw new IllegalArgumentException("redis URI '" + uri + "' names " + hosts.size()
                    + " hosts; use redis-sentinel:// or redis-cluster:// for several");
        }
        int database = database(uri, mode);
        String prefix = checkKeyPrefix(uri.parameters().getOrDefault("keyPrefix", DEFAULT_KEY_PREFIX));
        String master = uri.parameters().get("master");
        if (mode == Mode.SENTINEL && (master == null || master.isBlank())) {
            throw new IllegalArgumentException("redis-sentinel URI '" + uri + "' needs parameter 'master' (the"
                    + " name the Sentinels monitor, for example ?master=mymaster)");
        }
        if (mode != Mode.SENTINEL && master != null) {
            throw new IllegalArgumentException("parameter 'master' only applies to redis-sentinel:// URIs");
        }
        boolean tls = uri.scheme().equals("rediss");
        String tlsParam = uri.parameters().get("tls");
        if (tlsParam != null) {
            tls = switch (tlsParam.toLowerCase(Locale.ROOT)) {
                case "true" -> true;
                case "false" -> {
                    if (uri.scheme().equals("rediss")) {
                        throw new IllegalArgumentException("parameter 'tls' cannot be false on a rediss:// URI");
                    }
                    yield false;
                }
                default -> throw new IllegalArgumentException(
                        "parameter 'tls' must be true or false: '" + tlsParam + "'");
            };
        }
        String verify = uri.parameters().getOrDefault("verifyPeer", "full").toLowerCase(Locale.ROOT);
        if (!Set.of("full", "ca", "none").contains(verify)) {
            throw new IllegalArgumentException("parameter 'verifyPeer' must be full, ca or none: '"
                    + uri.parameters().get("verifyPeer") + "'");
        }
        String user = uri.user() == null || uri.user().isEmpty() ? null : uri.user();
        String password = uri.password() == null || uri.password().isEmpty() ? null : uri.password();
        if (user != null && password == null) {
            throw new IllegalArgumentException("redis URI has user '" + user + "' but no password");
        }
        int waitReplicas = waitReplicas(uri.parameters().get("waitReplicas"));
        java.time.Duration waitTimeout =
                BackendUri.duration("waitTimeout", uri.parameters().getOrDefault("waitTimeout", "1s"));
        if (waitReplicas > 0 && mode == Mode.CLUSTER) {
            // WAIT counts the writes of the connection it is sent on; Lettuce's cluster connection
            // spreads commands over node connections, so WAIT there could vouch for nothing.
            throw new IllegalArgumentException("parameter 'waitReplicas' is not supported on redis-cluster:// URIs");
        }
        if (waitTimeout.isZero()) {
            // WAIT with 0 blocks forever; a lock must never wait unbounded.
            throw new IllegalArgumentException("parameter 'waitTimeout' must be positive: '"
                    + uri.parameters().get("waitTimeout") + "'");
        }
        if (waitReplicas > 0 && waitTimeout.compareTo(uri.options().connectTimeout()) >= 0) {
            // Commands time out at connectTimeout, which would cut WAIT off and drop the connection.
            throw new IllegalArgumentException(
                    "parameter 'waitTimeout' (" + waitTimeout.toMillis() + " ms) must be shorter than connectTimeout ("
                            + uri.options().connectTimeout().toMillis() + " ms)");
        }
        return new RedisUri(
                mode,
                List.copyOf(hosts),
                database,
                user,
                password,
                prefix,
                master,
                tls,
                verify,
                waitReplicas,
                waitTimeout,
                uri.options());
    }

    /**
     * The settings for a user's Lettuce {@code RedisURI} handed in with {@link RedisLocks}: its
     * host (or Sentinels) and database, no dlock-side credentials (the client authenticates).
     */
    static RedisUri handedIn(io.lettuce.core.RedisURI target, String keyPrefix, LockOptions options) {
        boolean sentinel = !target.getSentinels().isEmpty();
        List<HostPort> hosts = sentinel
                ? target.getSentinels().stream()
                        .map(u -> new HostPort(u.getHost(), u.getPort()))
                        .toList()
                : List.of(new HostPort(target.getHost(), target.getPort()));
        return new RedisUri(
                sentinel ? Mode.SENTINEL : Mode.STANDALONE,
                hosts,
                target.getDatabase(),
                null,
                null,
                checkKeyPrefix(keyPrefix),
                sentinel ? target.getSentinelMasterId() : null,
                target.isSsl(),
                target.isVerifyPeer() ? "full" : "none",
                0,
                java.time.Duration.ofSeconds(1),
                options);
    }

    static String checkKeyPrefix(String prefix) {
        if (prefix.isEmpty() || !prefix.chars().allMatch(c -> c > 0x20 && c < 0x7f && c != '{' && c != '}')) {
            throw new IllegalArgumentException("parameter 'keyPrefix' must be non-empty printable ASCII without"
                    + " spaces or braces: '" + prefix + "'");
        }
        return prefix;
    }

    private static int waitReplicas(@Nullable String value) {
        if (value == null) {
            return 0;
        }
        try {
            int n = Integer.parseInt(value.trim());
            if (n >= 0 && n <= MAX_WAIT_REPLICAS) {
                return n;
            }
        } catch (NumberFormatException e) {
            // the message below
        }
        throw new IllegalArgumentException(
                "parameter 'waitReplicas' must be a whole number from 0 to " + MAX_WAIT_REPLICAS + ": '" + value + "'");
    }

    private static int database(BackendUri uri, Mode mode) {
        String path = uri.path();
        while (path.endsWith("/")) {
            path = path.substring(0, path.length() - 1);
        }
        if (path.isEmpty()) {
            return 0;
        }
        if (mode == Mode.CLUSTER) {
            throw new IllegalArgumentException("redis-cluster URI '" + uri + "' cannot select a database ('/" + path
                    + "'): Redis Cluster has only database 0");
        }
        try {
            int db = Integer.parseInt(path);
            if (db < 0) {
                throw new NumberFormatException();
            }
            return db;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(
                    "redis URI '" + uri + "' has path '/" + path + "', which is not a database number", e);
        }
    }

    private static HostPort hostPort(String hp, int defaultPort, BackendUri uri) {
        if (hp.isEmpty()) {
            throw new IllegalArgumentException("redis URI '" + uri + "' has an empty host");
        }
        String host = hp;
        String port = null;
        if (hp.startsWith("[")) {
            int close = hp.indexOf(']');
            if (close < 0) {
                throw new IllegalArgumentException("redis URI '" + uri + "' has a malformed host '" + hp + "'");
            }
            host = hp.substring(1, close);
            if (close + 1 < hp.length()) {
                if (hp.charAt(close + 1) != ':') {
                    throw new IllegalArgumentException("redis URI '" + uri + "' has a malformed host '" + hp + "'");
                }
                port = hp.substring(close + 2);
            }
        } else {
            int colon = hp.lastIndexOf(':');
            if (colon >= 0) {
                host = hp.substring(0, colon);
                port = hp.substring(colon + 1);
            }
        }
        if (host.isEmpty()) {
            throw new IllegalArgumentException("redis URI '" + uri + "' has an empty host");
        }
        if (port == null) {
            return new HostPort(host, defaultPort);
        }
        try {
            int p = Integer.parseInt(port);
            if (p < 1 || p > 65535) {
                throw new NumberFormatException();
            }
            return new HostPort(host, p);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("redis URI '" + uri + "' has an invalid port '" + port + "'", e);
        }
    }

    /** The hosts, comma-separated, for messages. */
    String hostList() {
        return String.join(",", hosts.stream().map(HostPort::toString).toList());
    }

    /** Hides the password. */
    @Override
    public String toString() {
        String scheme =
                switch (mode) {
                    case STANDALONE -> tls ? "rediss" : "redis";
                    case SENTINEL -> "redis-sentinel";
                    case CLUSTER -> "redis-cluster";
                };
        String auth = password == null ? "" : (user == null ? "" : user) + ":***@";
        return scheme + "://" + auth + hostList() + (database == 0 ? "" : "/" + database) + "?keyPrefix=" + keyPrefix
                + (master == null ? "" : "&master=" + master)
                + (waitReplicas == 0
                        ? ""
                        : "&waitReplicas=" + waitReplicas + "&waitTimeout=" + waitTimeout.toMillis() + "ms");
    }
}

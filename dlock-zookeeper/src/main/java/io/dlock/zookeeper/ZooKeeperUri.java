package io.dlock.zookeeper;

import io.dlock.LockOptions;
import io.dlock.spi.BackendUri;
import java.time.Duration;
import org.jspecify.annotations.Nullable;

/**
 * A {@code zookeeper://} URI: {@code zookeeper://[user:password@]host:port[,host:port]/namespace}.
 *
 * @param connectString the ensemble, for example {@code h1:2181,h2:2181}
 * @param namespace the znode path under which every lock lives, without leading slash; default
 *     {@value #DEFAULT_NAMESPACE}
 * @param user the digest user, or null
 * @param password the digest password, or null
 * @param options the client's options (session timeout, connect timeout, retry policy)
 */
record ZooKeeperUri(
        String connectString, String namespace, @Nullable String user, @Nullable String password, LockOptions options) {
    static final String DEFAULT_NAMESPACE = "dlock";
    static final int DEFAULT_PORT = 2181;

    /** The shortest session timeout a client may ask for. */
    static final Duration MIN_SESSION_TIMEOUT = Duration.ofMillis(100);

    /**
     * The longest session timeout requested from the server, which negotiates it down to its own
     * maximum anyway (20 ticks by default). ZooKeeper's client multiplies the requested value in
     * {@code int} arithmetic: asked for 10 days or more, it could not connect at all.
     */
    static final Duration MAX_REQUESTED_SESSION_TIMEOUT = Duration.ofDays(1);

    static ZooKeeperUri from(BackendUri uri) {
        StringBuilder hosts = new StringBuilder();
        for (String hostPort : uri.authority().split(",")) {
            if (hosts.length() > 0) {
                hosts.append(',');
            }
            hosts.append(hostAndPort(hostPort, uri));
        }
        String namespace = uri.path().isEmpty() ? DEFAULT_NAMESPACE : uri.path();
        while (namespace.endsWith("/")) {
            namespace = namespace.substring(0, namespace.length() - 1);
        }
        for (String segment : namespace.split("/", -1)) {
            if (segment.isEmpty()
                    || segment.equals(".")
                    || segment.equals("..")
                    || segment.equals("zookeeper")
                    || !segment.chars().allMatch(c -> c > 0x20 && c < 0x7f)) {
                throw new IllegalArgumentException(
                        "zookeeper namespace '" + namespace + "' has an invalid segment '" + segment + "'");
            }
        }
        if (uri.user() != null && uri.password() == null) {
            throw new IllegalArgumentException("zookeeper URI has user '" + uri.user() + "' but no password");
        }
        // ZooKeeper's client spends the requested session timeout on the connect itself (divided among
        // the hosts): below this it cannot connect at all, whatever the server would negotiate.
        if (uri.options().sessionTimeout().compareTo(MIN_SESSION_TIMEOUT) < 0) {
            throw new IllegalArgumentException("sessionTimeout must be at least " + MIN_SESSION_TIMEOUT.toMillis()
                    + "ms on ZooKeeper: " + uri.options().sessionTimeout());
        }
        return new ZooKeeperUri(hosts.toString(), namespace, uri.user(), uri.password(), uri.options());
    }

    private static String hostAndPort(String hostPort, BackendUri uri) {
        String hp = hostPort.trim();
        if (hp.isEmpty()) {
            throw new IllegalArgumentException("zookeeper URI '" + uri + "' has an empty host");
        }
        int colon = hp.lastIndexOf(':');
        if (colon < 0 || hp.endsWith("]")) {
            return hp + ":" + DEFAULT_PORT;
        }
        String port = hp.substring(colon + 1);
        try {
            int p = Integer.parseInt(port);
            if (p < 1 || p > 65535) {
                throw new NumberFormatException();
            }
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("zookeeper URI '" + uri + "' has an invalid port '" + port + "'", e);
        }
        return hp;
    }

    boolean hasCredentials() {
        return user != null;
    }

    /** Hides the password. */
    @Override
    public String toString() {
        return "zookeeper://" + (user == null ? "" : user + ":***@") + connectString + "/" + namespace;
    }
}

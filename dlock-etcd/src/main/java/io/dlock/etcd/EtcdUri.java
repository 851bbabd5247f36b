package io.dlock.etcd;

import io.dlock.LockOptions;
import io.dlock.spi.BackendUri;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * An {@code etcd://} or {@code etcds://} URI: {@code etcd://[user:password@]host:2379[,host:2379]/namespace}.
 *
 * <p>Own parameters: {@code lockDelay} (a duration, default 0: off) and, for {@code etcds://},
 * {@code ca} (a PEM file of the CA that signed the servers' certificates; without it the JVM's trust
 * store is used) and {@code authority} (the name the certificates must carry, default the host).
 *
 * @param endpoints the members' gRPC endpoints, for example {@code http://h1:2379}
 * @param namespace the key prefix under which every lock lives, without leading or trailing slash
 * @param user the etcd user, or null
 * @param password the user's password, or null
 * @param tls whether to speak TLS
 * @param ca the CA file, or null
 * @param authority the TLS authority, or null
 * @param lockDelay how long a lost holder's lock stays ungranted; zero for none
 * @param options the client's options
 */
record EtcdUri(
        List<URI> endpoints,
        String namespace,
        @Nullable String user,
        @Nullable String password,
        boolean tls,
        @Nullable Path ca,
        @Nullable String authority,
        Duration lockDelay,
        LockOptions options) {
    static final String DEFAULT_NAMESPACE = "dlock";
    static final int DEFAULT_PORT = 2379;
    static final Set<String> PARAMETERS = Set.of("lockDelay", "ca", "authority");

    static EtcdUri from(BackendUri uri) {
        boolean tls = uri.scheme().equals("etcds");
        List<URI> endpoints = new ArrayList<>();
        for (String hostPort : uri.authority().split(",", -1)) {
            endpoints.add(endpoint(hostPort, tls, uri));
        }
        String namespace = uri.path().isEmpty() ? DEFAULT_NAMESPACE : uri.path();
        while (namespace.endsWith("/")) {
            namespace = namespace.substring(0, namespace.length() - 1);
        }
        checkNamespace(namespace);
        if (uri.user() != null && uri.password() == null) {
            throw new IllegalArgumentException("etcd URI '" + uri + "' has user '" + uri.user() + "' but no password");
        }
        Duration lockDelay = Duration.ZERO;
        String delay = uri.parameters().get("lockDelay");
        if (delay != null) {
            lockDelay = BackendUri.duration("lockDelay", delay);
        }
        Path ca = null;
        String caText = uri.parameters().get("ca");
        if (caText != null) {
            if (!tls) {
                throw new IllegalArgumentException("etcd URI '" + uri + "': parameter 'ca' needs etcds://");
            }
            ca = Path.of(caText);
            if (!Files.isReadable(ca)) {
                throw new IllegalArgumentException("etcd URI '" + uri + "': CA file '" + caText + "' is not readable");
            }
        }
        String authority = uri.parameters().get("authority");
        if (authority != null && !tls) {
            throw new IllegalArgumentException("etcd URI '" + uri + "': parameter 'authority' needs etcds://");
        }
        return new EtcdUri(
                List.copyOf(endpoints),
                namespace,
                uri.user(),
                uri.password(),
                tls,
                ca,
                authority,
                lockDelay,
                uri.options());
    }

    /** A namespace for a handed-in client; the same rules as in a URI. */
    static EtcdUri handedIn(String namespace, Duration lockDelay, LockOptions options) {
        checkNamespace(namespace);
        if (lockDelay.isNegative()) {
            throw new IllegalArgumentException("lockDelay must not be negative, was " + lockDelay);
        }
        return new EtcdUri(List.of(), namespace, null, null, false, null, null, lockDelay, options);
    }

    private static void checkNamespace(String namespace) {
        if (namespace.isEmpty()) {
            throw new IllegalArgumentException("etcd namespace must not be empty");
        }
        for (String segment : namespace.split("/", -1)) {
            if (segment.isEmpty() || !segment.chars().allMatch(c -> c > 0x20 && c < 0x7f)) {
                throw new IllegalArgumentException("etcd namespace '" + namespace + "' has an invalid segment '"
                        + segment + "' (printable ASCII without spaces, no empty segments)");
            }
        }
    }

    private static URI endpoint(String hostPort, boolean tls, BackendUri uri) {
        String hp = hostPort.trim();
        if (hp.isEmpty()) {
            throw new IllegalArgumentException("etcd URI '" + uri + "' has an empty host");
        }
        int colon = hp.lastIndexOf(':');
        String host = hp;
        int port = DEFAULT_PORT;
        if (colon >= 0 && !hp.endsWith("]")) {
            host = hp.substring(0, colon);
            String p = hp.substring(colon + 1);
            try {
                port = Integer.parseInt(p);
                if (port < 1 || port > 65535) {
                    throw new NumberFormatException();
                }
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("etcd URI '" + uri + "' has an invalid port '" + p + "'", e);
            }
        }
        if (host.isEmpty()) {
            throw new IllegalArgumentException("etcd URI '" + uri + "' has an empty host");
        }
        return URI.create((tls ? "https://" : "http://") + host + ":" + port);
    }

    /** The members for messages: {@code h1:2379,h2:2379}. */
    String hostList() {
        if (endpoints.isEmpty()) {
            return "etcd (the application's client)";
        }
        return String.join(
                ",",
                endpoints.stream().map(e -> e.getHost() + ":" + e.getPort()).toList());
    }

    /** The etcd lease TTL in whole seconds: the lease time rounded up, at least 1. */
    long ttlSeconds() {
        long ms = options.leaseTime().toMillis();
        return Math.max(1, (ms + 999) / 1000);
    }

    /** Hides the password. */
    @Override
    public String toString() {
        return (tls ? "etcds://" : "etcd://") + (user == null ? "" : user + ":***@") + hostList() + "/" + namespace
                + (lockDelay.isZero() ? "" : "?lockDelay=" + lockDelay.toMillis() + "ms");
    }
}

package io.dlock.cli.internal.torture;

import io.dlock.cli.internal.DurationConverter;
import io.dlock.testkit.ZooKeeperProcess;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooKeeper;
import org.jspecify.annotations.Nullable;

/**
 * ZooKeeper under torture: either a server this target starts in a child JVM (so that it can be
 * killed with SIGKILL and restarted on its data), or an existing server named by a {@code
 * zookeeper://host:port[/path]} URI, which is never restarted.
 *
 * <p>Leftovers are the queue znodes under the run's namespace: every lock's parent is a container
 * node that ZooKeeper removes once empty, and every entry is an ephemeral node that must be gone
 * once its client has released it or its session has expired.
 *
 * <p>Thread-safety: the controller thread only.
 */
final class ZooKeeperTarget implements BackendTarget {

    private static final int INSPECT_SESSION_MS = 10_000;
    private static final long INSPECT_CONNECT_SECONDS = 10;

    private final @Nullable ZooKeeperProcess server; // null for an external server
    private final InetSocketAddress address;
    private final String basePath; // "" or "a/b", without slashes at the ends
    private final @Nullable String userInfo; // null or user:password
    private final String extraQuery; // "" or "&k=v..." carried over from the user's URI

    private ZooKeeperTarget(
            @Nullable ZooKeeperProcess server,
            InetSocketAddress address,
            String basePath,
            @Nullable String userInfo,
            String extraQuery) {
        this.server = server;
        this.address = address;
        this.basePath = basePath;
        this.userInfo = userInfo;
        this.extraQuery = extraQuery;
    }

    /** Starts a ZooKeeper server in a child JVM on a free loopback port with a fresh data directory. */
    static ZooKeeperTarget embedded() {
        ZooKeeperProcess zk = ZooKeeperProcess.start();
        return new ZooKeeperTarget(zk, new InetSocketAddress("127.0.0.1", zk.port()), "", null, "");
    }

    /**
     * Targets an existing server; {@code sessionTimeout} in the URI is replaced by the run's.
     *
     * @throws IllegalArgumentException for more than one host or a malformed URI
     */
    static ZooKeeperTarget external(String uri) {
        URI parsed = parse(uri);
        String authority = parsed.getRawAuthority();
        String hosts = authority.substring(authority.indexOf('@') + 1);
        int colon = hosts.lastIndexOf(':');
        String host = colon < 0 ? hosts : hosts.substring(0, colon);
        int port;
        try {
            port = colon < 0 ? 2181 : Integer.parseInt(hosts.substring(colon + 1));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("zookeeper URI '" + uri + "' has an invalid port", e);
        }
        InetSocketAddress address = new InetSocketAddress(host, port);
        if (address.isUnresolved()) {
            throw new IllegalArgumentException("cannot resolve the ZooKeeper host '" + host + "'");
        }
        String path = parsed.getRawPath() == null ? "" : parsed.getRawPath().replaceAll("^/+|/+$", "");
        StringBuilder extra = new StringBuilder();
        if (parsed.getRawQuery() != null) {
            for (String pair : parsed.getRawQuery().split("&")) {
                if (!pair.isEmpty() && !pair.startsWith("sessionTimeout=")) {
                    extra.append('&').append(pair);
                }
            }
        }
        return new ZooKeeperTarget(null, address, path, parsed.getRawUserInfo(), extra.toString());
    }

    /**
     * Checks an external server's URI without resolving it: one host, a path, well-formed.
     *
     * @throws IllegalArgumentException naming the problem
     */
    static URI parse(String uri) {
        URI parsed;
        try {
            parsed = new URI(uri);
        } catch (URISyntaxException e) {
            throw new IllegalArgumentException("malformed URI '" + uri + "': " + e.getMessage(), e);
        }
        String authority = parsed.getRawAuthority();
        if (authority == null || authority.isBlank()) {
            throw new IllegalArgumentException("zookeeper URI '" + uri + "' names no server");
        }
        String hosts = authority.substring(authority.indexOf('@') + 1);
        if (hosts.contains(",")) {
            throw new IllegalArgumentException("torture puts a fault proxy in front of one ZooKeeper server; the URI"
                    + " names several (" + hosts + "): give one of them");
        }
        return parsed;
    }

    @Override
    public String backend() {
        return "zookeeper";
    }

    @Override
    public String description() {
        String where = address.getHostString() + ":" + address.getPort();
        return server != null ? "ZooKeeper (embedded, child JVM on " + where + ")" : "ZooKeeper at " + where;
    }

    @Override
    public InetSocketAddress serverAddress() {
        return address;
    }

    @Override
    public String clientUri(String proxy, String namespace, Duration expiry) {
        return "zookeeper://" + (userInfo == null ? "" : userInfo + "@") + proxy + "/" + path(namespace)
                + "?sessionTimeout=" + DurationConverter.toParameter(expiry) + extraQuery;
    }

    @Override
    public boolean canRestartServer() {
        return server != null;
    }

    @Override
    public void restartServer(Duration downtime) {
        if (server == null) {
            throw new UnsupportedOperationException("cannot restart an external ZooKeeper server");
        }
        BackendTarget.bounce(server::kill, server::restart, downtime);
    }

    @Override
    public List<String> leftovers(String namespace) {
        String root = "/" + path(namespace);
        ZooKeeper zk = connectDirect();
        try {
            List<String> found = new ArrayList<>();
            for (String lock : children(zk, root)) {
                for (String entry : children(zk, root + "/" + lock)) {
                    found.add(root + "/" + lock + "/" + entry);
                }
            }
            return found;
        } catch (KeeperException e) {
            throw new IllegalStateException("cannot list " + root + " on " + description() + ": " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while listing " + root, e);
        } finally {
            try {
                zk.close();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    @Override
    public List<String> describeQueue(String namespace) {
        List<String> lines = new ArrayList<>();
        try {
            ZooKeeper zk = connectDirect();
            try {
                for (String path : leftovers(namespace)) {
                    org.apache.zookeeper.data.Stat stat = new org.apache.zookeeper.data.Stat();
                    try {
                        byte[] data = zk.getData(path, false, stat);
                        lines.add(path + " czxid=0x" + Long.toHexString(stat.getCzxid()) + " session=0x"
                                + Long.toHexString(stat.getEphemeralOwner()) + " data='"
                                + (data == null ? "" : new String(data, StandardCharsets.UTF_8)) + "'");
                    } catch (KeeperException.NoNodeException e) {
                        lines.add(path + " (gone)");
                    }
                }
            } finally {
                zk.close();
            }
        } catch (KeeperException | RuntimeException e) {
            lines.add("cannot read the queue: " + e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            lines.add("interrupted while reading the queue");
        }
        return lines;
    }

    @Override
    public void close() {
        if (server != null) {
            server.close();
        }
    }

    private String path(String namespace) {
        return basePath.isEmpty() ? namespace : basePath + "/" + namespace;
    }

    private static List<String> children(ZooKeeper zk, String path) throws KeeperException, InterruptedException {
        try {
            return zk.getChildren(path, false);
        } catch (KeeperException.NoNodeException e) {
            return List.of();
        }
    }

    private ZooKeeper connectDirect() {
        CountDownLatch connected = new CountDownLatch(1);
        String connectString = address.getHostString() + ":" + address.getPort();
        try {
            ZooKeeper zk = new ZooKeeper(connectString, INSPECT_SESSION_MS, event -> {
                if (event.getState() == Watcher.Event.KeeperState.SyncConnected) {
                    connected.countDown();
                }
            });
            if (userInfo != null) {
                zk.addAuthInfo(
                        "digest",
                        java.net.URLDecoder.decode(userInfo, StandardCharsets.UTF_8)
                                .getBytes(StandardCharsets.UTF_8));
            }
            if (!connected.await(INSPECT_CONNECT_SECONDS, TimeUnit.SECONDS)) {
                zk.close();
                throw new IllegalStateException("cannot connect to " + description() + " to look for leftovers");
            }
            return zk;
        } catch (java.io.IOException e) {
            throw new IllegalStateException("cannot connect to " + description() + ": " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while connecting to " + description(), e);
        }
    }
}

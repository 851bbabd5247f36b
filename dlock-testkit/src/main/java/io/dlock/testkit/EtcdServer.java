package io.dlock.testkit;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.HttpURLConnection;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * An {@code etcd} process (one member, or one member of an {@link EtcdCluster}) on free loopback
 * client and peer ports, started from the binary installed on the machine (Debian: {@code apt-get
 * install etcd-server}), for tests that need a real etcd.
 *
 * <p>The binary is, in order: the system property {@value #BINARY_PROPERTY}, the environment
 * variable {@code DLOCK_ETCD}, or {@code etcd} on the {@code PATH}. A missing binary is an {@link
 * IllegalStateException} that says how to install one; tests never skip.
 *
 * <p>Data lives in a temporary directory of its own and survives {@link #kill()} and {@link
 * #restart()} (etcd syncs its write-ahead log before it acknowledges a write).
 *
 * <p>Thread-safety: safe from any thread; lifecycle calls are serialized on this object.
 */
public final class EtcdServer extends ServerProcess {

    /** The system property naming the {@code etcd} binary. */
    public static final String BINARY_PROPERTY = "dlock.test.etcd";

    /** How long a start may take until the member reports healthy, before {@link Timing}. */
    public static final Duration START_TIMEOUT = Duration.ofSeconds(30);

    private final String name;
    private final int clientPort;
    private final int peerPort;
    /** {@code --initial-cluster}: every member's name and peer URL. */
    private final String initialCluster;

    private final String clusterToken;
    /** Whether a start waits for /health (a lone member of a cluster has no quorum to be healthy). */
    private final boolean waitHealthy;

    /** With {@link #startTls()}: the TLS client port and the directory of the certificates; else 0 and null. */
    private volatile int tlsPort;

    private volatile @Nullable Path tlsDir;

    EtcdServer(
            String name,
            int clientPort,
            int peerPort,
            Path dir,
            String initialCluster,
            String clusterToken,
            boolean waitHealthy) {
        super(dir);
        this.name = name;
        this.clientPort = clientPort;
        this.peerPort = peerPort;
        this.initialCluster = initialCluster;
        this.clusterToken = clusterToken;
        this.waitHealthy = waitHealthy;
    }

    /**
     * Starts a single-member etcd.
     *
     * <p>Blocking: until it reports healthy, at most {@link #START_TIMEOUT} scaled by {@link
     * Timing}. Thread-safety: safe from any thread. On failure: {@link IllegalStateException} naming
     * the reason (binary missing, did not start) with the log's tail; nothing is left running.
     *
     * @return the running server
     * @throws IllegalStateException if it cannot be started
     */
    public static EtcdServer start() {
        String binary = binary(); // fail before creating anything
        int client = FreePorts.loopback();
        int peer = FreePorts.loopback();
        Path dir = Reaper.createTempDirectory("dlock-etcd-");
        EtcdServer server =
                new EtcdServer("n0", client, peer, dir, "n0=http://127.0.0.1:" + peer, "dlock-" + client, true);
        synchronized (server) {
            try {
                server.launch(binary);
            } catch (RuntimeException e) {
                server.close();
                throw e;
            }
        }
        return server;
    }

    /**
     * Starts a single-member etcd that also serves TLS: the plain client port ({@link #port()}, for
     * health checks and inspecting clients) and a TLS client port ({@link #tlsPort()}) with a
     * server certificate for {@code 127.0.0.1} and {@code localhost}, signed by a throwaway CA
     * ({@link #caCertificate()}) that the {@code openssl} CLI makes in {@link #dir()}.
     *
     * <p>Blocking: until it reports healthy (as {@link #start()}), plus a second or so for
     * openssl. Thread-safety: safe from any thread. On failure: {@link IllegalStateException}
     * naming the reason (binary or openssl missing, did not start); nothing is left running.
     *
     * @return the running server
     * @throws IllegalStateException if it cannot be started
     */
    public static EtcdServer startTls() {
        String binary = binary();
        TlsMaterial.openssl(); // fail before creating anything
        int client = FreePorts.loopback();
        int peer = FreePorts.loopback();
        Path dir = Reaper.createTempDirectory("dlock-etcd-tls-");
        EtcdServer server =
                new EtcdServer("n0", client, peer, dir, "n0=http://127.0.0.1:" + peer, "dlock-" + client, true);
        synchronized (server) {
            try {
                TlsMaterial.create(dir);
                server.tlsPort = FreePorts.loopback();
                server.tlsDir = dir;
                server.launch(binary);
            } catch (RuntimeException e) {
                server.close();
                throw e;
            }
        }
        return server;
    }

    /**
     * Returns the TLS client port of a server from {@link #startTls()}.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: {@link
     * IllegalStateException} for a server without TLS.
     *
     * @return the port
     */
    public int tlsPort() {
        if (tlsDir == null) {
            throw new IllegalStateException(this + " was not started with startTls()");
        }
        return tlsPort;
    }

    /**
     * Returns the PEM file of the throwaway CA that signed the TLS certificate of a server from
     * {@link #startTls()}.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: {@link
     * IllegalStateException} for a server without TLS.
     *
     * @return the CA certificate file
     */
    public Path caCertificate() {
        Path d = tlsDir;
        if (d == null) {
            throw new IllegalStateException(this + " was not started with startTls()");
        }
        return d.resolve(TlsMaterial.CA_CERTIFICATE);
    }

    /**
     * Makes another throwaway CA, one that signed nothing this server presents, for tests of a
     * client that trusts the wrong CA.
     *
     * <p>Blocking: while openssl runs, about a second. Thread-safety: safe from any thread. On
     * failure: {@link IllegalStateException} if openssl is missing or fails.
     *
     * @return the PEM file of the other CA, in {@link #dir()}
     */
    public Path otherCaCertificate() {
        Path other = dir().resolve("other-ca");
        try {
            Files.createDirectories(other);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create " + other, e);
        }
        return TlsMaterial.create(other).file(TlsMaterial.CA_CERTIFICATE);
    }

    /** The client URLs to listen on and advertise: plain, plus TLS with {@link #startTls()}. */
    private String clientUrls() {
        String plain = "http://127.0.0.1:" + clientPort;
        return tlsDir == null ? plain : plain + ",https://127.0.0.1:" + tlsPort;
    }

    /** The flags that give the TLS URLs their certificate; none without TLS. */
    private List<String> tlsFlags() {
        Path d = tlsDir;
        if (d == null) {
            return List.of();
        }
        return List.of(
                "--cert-file",
                d.resolve(TlsMaterial.SERVER_CERTIFICATE).toString(),
                "--key-file",
                d.resolve(TlsMaterial.SERVER_KEY).toString());
    }

    @Override
    public int port() {
        return clientPort;
    }

    /**
     * Returns the member's peer port.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: never fails.
     *
     * @return the port peers connect to
     */
    public int peerPort() {
        return peerPort;
    }

    /**
     * Returns the member's name in the cluster.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: never fails.
     *
     * @return for example {@code n0}
     */
    public String name() {
        return name;
    }

    /**
     * Returns {@code etcd://127.0.0.1:PORT/<namespace>}.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: {@link
     * IllegalArgumentException} for a blank namespace or one with whitespace.
     *
     * @param namespace the key prefix for dlock's keys; one leading {@code '/'} is ignored
     * @return the URI as a string
     * @throws IllegalArgumentException if {@code namespace} is blank or contains whitespace
     */
    @Override
    public String uri(String namespace) {
        return "etcd://" + connectString() + "/" + TestServer.checkNamespace(namespace);
    }

    /**
     * Writes the epoch marker of {@code namespace} ({@code <ns>//#epoch}, token offset 0) unless it
     * has one, as a first grant leaves it once its data-loss fence has run out: a test server is
     * known never to have granted anything in a fresh namespace, so its first acquire need not wait a
     * lease time. The mirror of {@link RedisServer#markFreshPrefix(String)}.
     *
     * <p>Blocking: one HTTP round trip (etcd's JSON gateway), at most 5 s. Thread-safety: safe from
     * any thread. On failure: {@link IllegalStateException}.
     *
     * @param namespace the namespace as in {@link #uri(String)}; one leading {@code '/'} is ignored
     * @throws IllegalStateException if the marker cannot be written
     */
    public void markFreshNamespace(String namespace) {
        java.util.Base64.Encoder b64 = java.util.Base64.getEncoder();
        String key = b64.encodeToString(
                (TestServer.checkNamespace(namespace) + "//#epoch").getBytes(StandardCharsets.UTF_8));
        String value = b64.encodeToString("test 0".getBytes(StandardCharsets.UTF_8));
        String body = "{\"compare\":[{\"key\":\"" + key + "\",\"target\":\"CREATE\",\"result\":\"EQUAL\","
                + "\"create_revision\":\"0\"}],\"success\":[{\"request_put\":{\"key\":\"" + key
                + "\",\"value\":\"" + value + "\"}}]}";
        HttpURLConnection c = null;
        try {
            c = (HttpURLConnection) new URL("http://127.0.0.1:" + clientPort + "/v3/kv/txn").openConnection();
            c.setConnectTimeout(5_000);
            c.setReadTimeout(5_000);
            c.setRequestMethod("POST");
            c.setDoOutput(true);
            try (java.io.OutputStream out = c.getOutputStream()) {
                out.write(body.getBytes(StandardCharsets.UTF_8));
            }
            int code = c.getResponseCode();
            if (code != 200) {
                throw new IllegalStateException("etcd answered " + code + " to marking " + namespace);
            }
            try (InputStream in = c.getInputStream()) {
                in.readAllBytes();
            }
        } catch (IOException e) {
            throw new IllegalStateException("cannot mark the epoch of " + namespace + " on " + this, e);
        } finally {
            if (c != null) {
                c.disconnect();
            }
        }
    }

    /**
     * Returns whether the member answers {@code /health} with {@code "health":"true"} (it is up and
     * its cluster has a leader).
     *
     * <p>Blocking: one HTTP round trip, at most 1 s. Thread-safety: safe from any thread. On
     * failure: false.
     *
     * @return true if healthy
     */
    public boolean isHealthy() {
        return health(clientPort, Duration.ofSeconds(1));
    }

    @Override
    public String toString() {
        return "EtcdServer[" + name + ", " + connectString() + ", peer " + peerPort + ", " + dir() + "]";
    }

    @Override
    @GuardedBy("this")
    void launch() {
        launch(binary());
    }

    /** Starts the process; waits for health if {@link #waitHealthy}, else only that it stays up. */
    synchronized void launch(String binary) {
        Path logFile = logFile();
        String peerUrl = "http://127.0.0.1:" + peerPort;
        String clientUrl = clientUrls();
        List<String> cmd = new ArrayList<>(List.of(
                binary,
                "--name",
                name,
                "--data-dir",
                dir().resolve("data").toString(),
                "--listen-client-urls",
                clientUrl,
                "--advertise-client-urls",
                clientUrl,
                "--listen-peer-urls",
                peerUrl,
                "--initial-advertise-peer-urls",
                peerUrl,
                "--initial-cluster",
                initialCluster,
                "--initial-cluster-token",
                clusterToken,
                "--initial-cluster-state",
                "new",
                "--heartbeat-interval",
                "100",
                "--election-timeout",
                "1000",
                "--enable-v2=false",
                "--logger",
                "zap",
                "--log-outputs",
                "stderr"));
        cmd.addAll(tlsFlags());
        Process p = spawn(cmd, logFile);
        if (!waitHealthy) {
            return;
        }
        awaitHealthy(p, logFile);
    }

    /** Waits until /health says true; kills the process and throws if it does not in time. */
    void awaitHealthy(Process p, Path logFile) {
        awaitReady(
                p,
                Timing.scale(START_TIMEOUT),
                Duration.ofMillis(50),
                "report healthy",
                () -> health(clientPort, Duration.ofMillis(500)),
                logFile,
                "");
    }

    Path logFile() {
        return dir().resolve("etcd.log");
    }

    static boolean health(int port, Duration timeout) {
        HttpURLConnection c = null;
        try {
            c = (HttpURLConnection) new URL("http://127.0.0.1:" + port + "/health").openConnection();
            c.setConnectTimeout((int) timeout.toMillis());
            c.setReadTimeout((int) timeout.toMillis());
            if (c.getResponseCode() != 200) {
                return false;
            }
            try (InputStream in = c.getInputStream()) {
                String body = new String(in.readAllBytes(), StandardCharsets.UTF_8);
                return body.replace(" ", "").contains("\"health\":\"true\"");
            }
        } catch (IOException e) {
            return false;
        } finally {
            if (c != null) {
                c.disconnect();
            }
        }
    }

    /** The etcd binary, or an exception saying how to get one. */
    static String binary() {
        return binary("etcd", BINARY_PROPERTY, "DLOCK_ETCD", "etcd-server", "/usr/bin");
    }
}

package io.dlock.testkit;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import javax.net.ssl.SSLSocketFactory;
import org.jspecify.annotations.Nullable;

/**
 * A {@code redis-server} process on a free loopback port, started from the binary installed on
 * the machine (Debian: {@code apt-get install redis-server}), for tests that need a real Redis.
 *
 * <p>The binary is, in order: the system property {@value #BINARY_PROPERTY}, the environment
 * variable {@code DLOCK_REDIS_SERVER}, or {@code redis-server} on the {@code PATH}. A missing binary
 * is an {@link IllegalStateException} that says how to install one; tests never skip.
 *
 * <p>By default the server keeps an append-only file fsynced on every write, so {@link #restart()}
 * and {@link #kill()} followed by a restart lose nothing, like ZooKeeper's committed data. {@link
 * Builder#persistence(boolean) persistence(false)} gives a server that forgets everything when it
 * restarts, to test what a client does when a server loses its data.
 *
 * <p>{@link Builder#tls() tls()} gives a server that speaks only TLS, with a throwaway CA and a
 * server certificate for {@code 127.0.0.1} and {@code localhost} made by the {@code openssl} CLI;
 * tests trust it through {@link #caCertificate()} or {@link #caTrustStore()}.
 *
 * <p>Thread-safety: safe from any thread; lifecycle calls are serialized on this object.
 */
public final class RedisServer extends ServerProcess {

    /** The system property naming the {@code redis-server} binary. */
    public static final String BINARY_PROPERTY = "dlock.test.redisServer";

    /** How long a start may take until the server answers PING, before {@link Timing}. */
    public static final Duration START_TIMEOUT = Duration.ofSeconds(20);

    /** The password of {@link #caTrustStore()}. */
    public static final String TRUST_STORE_PASSWORD = TlsMaterial.TRUST_STORE_PASSWORD;

    private static final Duration PROBE_TIMEOUT = Duration.ofMillis(500);

    private final int port;
    private final String binary;
    private final List<String> config;
    private final boolean sentinel;
    private final @Nullable String password;
    private final boolean persistence;
    private final boolean tls;

    /** Trusts this server's CA; set once before the first launch, null without TLS. */
    private volatile @Nullable SSLSocketFactory tlsSockets;

    private RedisServer(Builder b, String binary, int port, Path dir) {
        super(dir);
        this.binary = binary;
        this.port = port;
        this.config = List.copyOf(b.config);
        this.sentinel = b.sentinel;
        this.password = b.probePassword;
        this.persistence = b.persistence;
        this.tls = b.tls;
    }

    /**
     * Starts a default server: no password, persistence on.
     *
     * <p>Blocking: until it answers PING, at most {@link #START_TIMEOUT} scaled by {@link Timing}.
     * Thread-safety: safe from any thread. On failure: {@link IllegalStateException} naming the
     * reason (binary missing, did not start) with the log's tail; nothing is left running.
     *
     * @return the running server
     * @throws IllegalStateException if it cannot be started
     */
    public static RedisServer start() {
        return builder().start();
    }

    /**
     * A builder for servers with extra configuration.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread; the builder itself is not. On
     * failure: cannot fail.
     *
     * @return a new builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /** Waits until this replica reports its master link up; throws {@link IllegalStateException} if it does not. */
    private void awaitReplicaLink() {
        long deadline = System.nanoTime() + Timing.scale(START_TIMEOUT).toNanos();
        while (!String.valueOf(command("INFO", "replication")).contains("master_link_status:up")) {
            if (System.nanoTime() - deadline > 0) {
                throw new IllegalStateException("RedisServer: replica on port " + port
                        + " did not sync with its master within " + Timing.scale(START_TIMEOUT));
            }
            try {
                Thread.sleep(50); // polling a server state, not standing in for a test condition
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("RedisServer: interrupted while waiting for the replica link", e);
            }
        }
    }

    /**
     * Configures a server before it starts.
     *
     * <p>Thread-safety: not thread-safe; confine to one thread.
     */
    public static final class Builder {
        private final List<String> config = new ArrayList<>();
        private boolean persistence = true;
        private boolean sentinel;
        private boolean tls;
        private @Nullable String probePassword;
        private int port;
        private boolean replica;

        private Builder() {}

        /**
         * Adds one {@code redis.conf} line, for example {@code "requirepass s3cret"} or {@code "user
         * alice on >pw ~* &* +@all"}.
         *
         * <p>Blocking: never. Thread-safety: confined. On failure: throws for null.
         *
         * @param line the configuration line
         * @return this builder
         */
        public Builder config(String line) {
            config.add(Objects.requireNonNull(line, "line"));
            return this;
        }

        /**
         * Turns the fsynced append-only file on (the default) or off.
         *
         * <p>Blocking: never. Thread-safety: confined. On failure: cannot fail.
         *
         * @param on whether data survives a kill and restart
         * @return this builder
         */
        public Builder persistence(boolean on) {
            this.persistence = on;
            return this;
        }

        /**
         * Runs {@code redis-server --sentinel} instead of a data server; add {@code sentinel
         * monitor ...} lines with {@link #config}.
         *
         * <p>Blocking: never. Thread-safety: confined. On failure: cannot fail.
         *
         * @return this builder
         */
        public Builder sentinel() {
            this.sentinel = true;
            return this;
        }

        /**
         * Makes the server a replica of {@code master} ({@code replicaof 127.0.0.1 <port>});
         * {@link #start()} then also waits until the replica is in sync.
         *
         * <p>Blocking: never. Thread-safety: confined. On failure: throws for null.
         *
         * @param master the running master
         * @return this builder
         */
        public Builder replicaOf(RedisServer master) {
            config("replicaof 127.0.0.1 "
                    + Objects.requireNonNull(master, "master").port());
            this.replica = true;
            return this;
        }

        /**
         * Makes the server speak TLS only: {@code port 0}, {@code tls-port} on the free port, a
         * certificate for {@code 127.0.0.1}/{@code localhost} signed by a CA made for this server
         * alone, and {@code tls-auth-clients no} (clients need no certificate). The files are made
         * with the {@code openssl} CLI in {@link #dir()} when the server starts; {@link #command} and
         * the readiness probe then use TLS and verify the certificate. For TLS between a replica and
         * its master, also add {@code config("tls-replication yes")}. Not for {@link #sentinel()}.
         *
         * <p>Blocking: never. Thread-safety: confined. On failure: cannot fail here; {@link #start()}
         * throws if {@code openssl} is missing or redis-server was built without TLS.
         *
         * @return this builder
         */
        public Builder tls() {
            this.tls = true;
            return this;
        }

        /**
         * The password (of the default user) that the readiness probe sends before PING.
         *
         * <p>Blocking: never. Thread-safety: confined. On failure: cannot fail.
         *
         * @param password the password, or null
         * @return this builder
         */
        public Builder probePassword(String password) {
            this.probePassword = password;
            return this;
        }

        /**
         * Uses a given port instead of a free one.
         *
         * <p>Blocking: never. Thread-safety: confined. On failure: throws for a port outside 1..65535.
         *
         * @param port the port on 127.0.0.1
         * @return this builder
         * @throws IllegalArgumentException if out of range
         */
        public Builder port(int port) {
            if (port < 1 || port > 65_535) {
                throw new IllegalArgumentException("port must be in 1..65535, was " + port);
            }
            this.port = port;
            return this;
        }

        /**
         * Starts the server.
         *
         * <p>Blocking: until it answers PING, at most {@link #START_TIMEOUT} scaled by {@link
         * Timing}, plus certificate generation with {@link #tls()}; with {@link #replicaOf}, also
         * until its link to the master is up, at most as long again. Thread-safety: confined. On
         * failure: {@link IllegalStateException} with the log's tail (or openssl's output); nothing
         * is left running and the directory is deleted.
         *
         * @return the running server
         * @throws IllegalStateException if it cannot be started, or {@link #tls()} was combined with
         *     {@link #sentinel()}
         */
        public RedisServer start() {
            String binary = binary(); // fail before creating anything
            if (tls) {
                if (sentinel) {
                    throw new IllegalStateException("RedisServer: tls() is not supported together with sentinel()");
                }
                TlsMaterial.openssl(); // fail before creating anything
            }
            Path dir = Reaper.createTempDirectory("dlock-redis-");
            RedisServer server = new RedisServer(this, binary, port != 0 ? port : FreePorts.loopback(), dir);
            synchronized (server) {
                try {
                    if (tls) {
                        server.tlsSockets = TlsMaterial.create(dir).socketFactory();
                    }
                    server.launch();
                    if (replica) {
                        server.awaitReplicaLink();
                    }
                } catch (RuntimeException e) {
                    server.close();
                    throw e;
                }
            }
            return server;
        }
    }

    @Override
    public int port() {
        return port;
    }

    /**
     * Returns {@code redis://127.0.0.1:PORT?keyPrefix=<namespace>}, or {@code rediss://…} for a
     * {@link Builder#tls() TLS} server. The {@code rediss} URI keeps dlock's default {@code
     * verifyPeer=full}, so the client's JVM must trust {@link #caTrustStore()}; append {@code
     * &verifyPeer=none} to skip verification.
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
        String ns = TestServer.checkNamespace(namespace);
        return (tls ? "rediss" : "redis") + "://127.0.0.1:" + port + "?keyPrefix=" + ns;
    }

    /**
     * Returns whether this server speaks TLS only ({@link Builder#tls()}).
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: never fails.
     *
     * @return true for a TLS server
     */
    public boolean isTls() {
        return tls;
    }

    /**
     * Returns the PEM file of the CA that signed this server's certificate, for clients that
     * should verify the server.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: {@link
     * IllegalStateException} if the server was not built with {@link Builder#tls()}. The file is
     * deleted by {@link #close()}.
     *
     * @return the CA certificate, PEM-encoded
     * @throws IllegalStateException without TLS
     */
    public Path caCertificate() {
        requireTls("caCertificate");
        return dir().resolve(TlsMaterial.CA_CERTIFICATE);
    }

    /**
     * Returns a PKCS12 trust store holding only this server's CA, with password {@value
     * #TRUST_STORE_PASSWORD}, for {@code -Djavax.net.ssl.trustStore=} in a child JVM (the JVM-wide
     * properties should not be set in a shared test JVM).
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: {@link
     * IllegalStateException} if the server was not built with {@link Builder#tls()}. The file is
     * deleted by {@link #close()}.
     *
     * @return the trust store file
     * @throws IllegalStateException without TLS
     */
    public Path caTrustStore() {
        requireTls("caTrustStore");
        return dir().resolve(TlsMaterial.TRUST_STORE);
    }

    private void requireTls(String what) {
        if (!tls) {
            throw new IllegalStateException(this + ": " + what + "() needs a server built with tls()");
        }
    }

    /**
     * Marks dlock-redis's epoch marker for a key prefix under which nothing was ever granted, so
     * that its first grants skip the data-loss fence (one lease time). A marker that exists is kept.
     *
     * <p>Blocking: one round trip. Thread-safety: safe from any thread. On failure: {@link
     * IllegalStateException} if the server does not answer.
     *
     * @param keyPrefix the prefix dlock-redis uses ({@code keyPrefix}, the namespace of {@link #uri})
     */
    public void markFreshPrefix(String keyPrefix) {
        command("SET", keyPrefix + ":epoch", "=0", "NX");
    }

    /**
     * Sends one command over a fresh connection (TLS, verifying the certificate, for a {@link
     * Builder#tls()} server) and returns the reply: a {@code String}, a {@code Long}, a {@code
     * List<Object>} or null. For inspection and fault injection in tests.
     *
     * <p>Blocking: one round trip, at most 5 s. Thread-safety: safe from any thread. On failure:
     * {@link IllegalStateException} with the server's error reply; {@link UncheckedIOException} if it
     * cannot be reached or the TLS handshake fails.
     *
     * @param args the command and its arguments, for example {@code "KEYS", "dlock:*"}
     * @return the reply; null for a nil reply
     * @throws IllegalStateException if the server answers with an error
     */
    public @Nullable Object command(String... args) {
        return Resp.command(port, tlsSockets, password, Duration.ofSeconds(5), args);
    }

    @Override
    public String toString() {
        return "RedisServer[" + connectString() + (sentinel ? ", sentinel" : "") + (tls ? ", tls" : "") + ", " + dir()
                + "]";
    }

    @Override
    @GuardedBy("this")
    void launch() {
        Path dir = dir();
        Path conf = dir.resolve(sentinel ? "sentinel.conf" : "redis.conf");
        Path logFile = dir.resolve("redis.log");
        List<String> lines = new ArrayList<>();
        if (tls) {
            lines.add("port 0");
            lines.add("tls-port " + port);
            lines.add("tls-cert-file "
                    + dir.resolve(TlsMaterial.SERVER_CERTIFICATE).toAbsolutePath());
            lines.add("tls-key-file " + dir.resolve(TlsMaterial.SERVER_KEY).toAbsolutePath());
            lines.add("tls-ca-cert-file "
                    + dir.resolve(TlsMaterial.CA_CERTIFICATE).toAbsolutePath());
            lines.add("tls-auth-clients no");
        } else {
            lines.add("port " + port);
        }
        lines.add("bind 127.0.0.1");
        lines.add("daemonize no");
        lines.add("dir " + dir.toAbsolutePath());
        lines.add("logfile \"\"");
        if (!sentinel) {
            lines.add("save \"\"");
            lines.add("appendonly " + (persistence ? "yes" : "no"));
            lines.add("appendfsync always");
        }
        lines.addAll(config);
        try {
            if (!sentinel || !Files.exists(conf)) { // a sentinel rewrites its own file; keep its state
                Files.write(conf, lines, StandardCharsets.UTF_8);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + conf, e);
        }
        List<String> cmd = new ArrayList<>(List.of(binary, conf.toString()));
        if (sentinel) {
            cmd.add("--sentinel");
        }
        Process p = spawn(cmd, logFile);
        String hint = tls ? "\n  (a TLS server: was redis-server built with TLS, BUILD_TLS=yes?)" : "";
        awaitReady(
                p,
                Timing.scale(START_TIMEOUT),
                Duration.ofMillis(20),
                "answer PING",
                () -> Resp.isUp(port, tlsSockets, password, PROBE_TIMEOUT),
                logFile,
                hint);
    }

    /** The redis-server binary, or an exception saying how to get one. */
    static String binary() {
        return binary("redis-server", BINARY_PROPERTY, "DLOCK_REDIS_SERVER", "redis-server");
    }
}

package io.dlock.testkit;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A {@code memcached} process on a free loopback port, started from the binary installed on the
 * machine (Debian: {@code apt-get install memcached}), for tests that need a real Memcached.
 *
 * <p>The binary is, in order: the system property {@value #BINARY_PROPERTY}, the environment
 * variable {@code DLOCK_MEMCACHED}, or {@code memcached} on the {@code PATH}. A missing binary is an
 * {@link IllegalStateException} that says how to install one; tests never skip.
 *
 * <p>Memcached keeps nothing on disk: {@link #restart()} and {@link #kill()} lose every item, which
 * is what the tests of a client's data-loss handling need.
 *
 * <p>Thread-safety: safe from any thread; lifecycle calls are serialized on this object.
 */
public final class MemcachedServer extends ServerProcess {

    /** The system property naming the {@code memcached} binary. */
    public static final String BINARY_PROPERTY = "dlock.test.memcached";

    /** How long a start may take until the server answers, before {@link Timing}. */
    public static final Duration START_TIMEOUT = Duration.ofSeconds(20);

    private final String binary;
    private final int port;
    private final int memoryMb;

    /** More command-line arguments ({@link #startWithAuth}); set before the first launch. */
    private volatile List<String> extraArgs = List.of();

    private MemcachedServer(String binary, int port, Path dir, int memoryMb) {
        super(dir);
        this.binary = binary;
        this.port = port;
        this.memoryMb = memoryMb;
    }

    /**
     * Starts a server with 64 MB of memory.
     *
     * <p>Blocking: until it answers, at most {@link #START_TIMEOUT} scaled by {@link Timing}.
     * Thread-safety: safe from any thread. On failure: {@link IllegalStateException} naming the
     * reason (binary missing, did not start) with the log's tail; nothing is left running.
     *
     * @return the running server
     * @throws IllegalStateException if it cannot be started
     */
    public static MemcachedServer start() {
        return start(64);
    }

    /**
     * Starts a server with {@code memoryMb} megabytes for items ({@code -m}); 1 makes a server that
     * evicts after about a megabyte of items.
     *
     * <p>Blocking: until it answers. Thread-safety: safe from any thread. On failure: {@link
     * IllegalStateException} with the log's tail; nothing is left running.
     *
     * @param memoryMb item memory in megabytes, at least 1
     * @return the running server
     * @throws IllegalArgumentException if {@code memoryMb} is below 1
     * @throws IllegalStateException if it cannot be started
     */
    public static MemcachedServer start(int memoryMb) {
        if (memoryMb < 1) {
            throw new IllegalArgumentException("memoryMb must be at least 1, was " + memoryMb);
        }
        String binary = binary();
        Path dir = Reaper.createTempDirectory("dlock-memcached-");
        MemcachedServer server = new MemcachedServer(binary, FreePorts.loopback(), dir, memoryMb);
        synchronized (server) {
            try {
                server.launch();
            } catch (RuntimeException e) {
                server.close();
                throw e;
            }
        }
        return server;
    }

    /**
     * Starts a server with 64 MB of memory that requires memcached's ASCII-protocol authentication
     * ({@code -Y}) with one user: every connection must first send {@code set <any key> 0 0 <n>}
     * with the data {@code "user password"}. {@link #command} and {@link #keys} do not authenticate,
     * so on this server they only see {@code CLIENT_ERROR unauthenticated}.
     *
     * <p>Blocking: until it answers. Thread-safety: safe from any thread. On failure: {@link
     * IllegalStateException} with the log's tail; nothing is left running.
     *
     * @param user the user name, without spaces or colons
     * @param password the password, without spaces
     * @return the running server
     * @throws IllegalArgumentException if either is empty or holds a space, a colon (user) or a line break
     * @throws IllegalStateException if it cannot be started
     */
    public static MemcachedServer startWithAuth(String user, String password) {
        if (user.isEmpty() || password.isEmpty() || (user + password).matches(".*[\\s].*") || user.contains(":")) {
            throw new IllegalArgumentException(
                    "user and password must be non-empty, without whitespace (and no ':'" + " in the user)");
        }
        String binary = binary();
        Path dir = Reaper.createTempDirectory("dlock-memcached-");
        MemcachedServer server = new MemcachedServer(binary, FreePorts.loopback(), dir, 64);
        synchronized (server) {
            try {
                Path authFile = dir.resolve("auth");
                Files.writeString(authFile, user + ":" + password + "\n", StandardCharsets.UTF_8);
                server.extraArgs = List.of("-Y", authFile.toString());
                server.launch();
            } catch (IOException e) {
                server.close();
                throw new UncheckedIOException(e);
            } catch (RuntimeException e) {
                server.close();
                throw e;
            }
        }
        return server;
    }

    @Override
    public int port() {
        return port;
    }

    /**
     * Returns {@code memcached://127.0.0.1:PORT?keyPrefix=<namespace>}.
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
        return "memcached://127.0.0.1:" + port + "?keyPrefix=" + TestServer.checkNamespace(namespace);
    }

    /**
     * Sends one text or meta command line (with its data block, if any, after {@code \r\n}) over a
     * fresh connection and returns the reply as text, lines joined by {@code \n}: one line, a
     * {@code VA} line with its value, or every line up to {@code END} for {@code stats} and {@code
     * lru_crawler metadump}. For inspection and fault injection in tests.
     *
     * <p>Blocking: one round trip, at most 5 s. Thread-safety: safe from any thread. On failure:
     * {@link UncheckedIOException} if the server cannot be reached or does not answer.
     *
     * @param command for example {@code "mg dlock:l:x v"} or {@code "md dlock:l:x"}
     * @return the reply without its final line break
     * @throws UncheckedIOException if the server cannot be reached
     */
    public String command(String command) {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress("127.0.0.1", port), 5000);
            s.setSoTimeout(5000);
            OutputStream out = s.getOutputStream();
            out.write((command + "\r\n").getBytes(StandardCharsets.UTF_8));
            out.flush();
            boolean untilEnd = command.startsWith("stats") || command.startsWith("lru_crawler metadump");
            InputStream in = s.getInputStream();
            List<String> lines = new ArrayList<>();
            while (true) {
                String line = readLine(in);
                if (untilEnd) {
                    // metadump ends its key lines with a bare \n: one CRLF-terminated read may hold many
                    String[] parts = line.split("\n", -1);
                    String last = parts[parts.length - 1];
                    for (int i = 0; i < parts.length - 1; i++) {
                        lines.add(parts[i]);
                    }
                    if (last.equals("END")
                            || last.startsWith("ERROR")
                            || last.startsWith("CLIENT_ERROR")
                            || last.startsWith("BUSY")) {
                        if (!last.equals("END")) {
                            lines.add(last);
                        }
                        break;
                    }
                    lines.add(last);
                    continue;
                }
                lines.add(line);
                if (line.startsWith("VA ")) {
                    lines.add(readLine(in));
                }
                break;
            }
            return String.join("\n", lines);
        } catch (IOException e) {
            throw new UncheckedIOException(this + ": command '" + command + "' failed", e);
        }
    }

    /**
     * Returns every live key whose name starts with {@code prefix}, from {@code lru_crawler
     * metadump all}.
     *
     * <p>Blocking: one round trip, at most 5 s (retried while the crawler is busy, at most 5 s).
     * Thread-safety: safe from any thread. On failure: {@link UncheckedIOException} if the server
     * cannot be reached; {@link IllegalStateException} if the crawler stays busy.
     *
     * @param prefix the start of the keys wanted, {@code ""} for all
     * @return the keys, in the crawler's order
     */
    public List<String> keys(String prefix) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (true) {
            String dump = command("lru_crawler metadump all");
            if (!dump.startsWith("BUSY")) {
                List<String> keys = new ArrayList<>();
                for (String line : dump.split("\n")) {
                    if (line.startsWith("key=")) {
                        int sp = line.indexOf(' ');
                        String key = URLDecoder.decode(
                                line.substring(4, sp < 0 ? line.length() : sp), StandardCharsets.UTF_8);
                        if (key.startsWith(prefix)) {
                            keys.add(key);
                        }
                    }
                }
                return keys;
            }
            if (System.nanoTime() - deadline > 0) {
                throw new IllegalStateException(this + ": lru_crawler stayed busy: " + dump);
            }
            try {
                Thread.sleep(20); // the crawler runs one dump at a time
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted", e);
            }
        }
    }

    private static String readLine(InputStream in) throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        int prev = -1;
        while (true) {
            int c = in.read();
            if (c < 0) {
                throw new IOException("connection closed mid-reply");
            }
            if (prev == '\r' && c == '\n') {
                byte[] bytes = b.toByteArray();
                return new String(bytes, 0, bytes.length - 1, StandardCharsets.UTF_8);
            }
            b.write(c);
            prev = c;
        }
    }

    @Override
    public String toString() {
        return "MemcachedServer[" + connectString() + ", " + memoryMb + " MB]";
    }

    @Override
    @GuardedBy("this")
    void launch() {
        Path logFile = dir().resolve("memcached.log");
        List<String> cmd = new ArrayList<>(List.of(
                binary,
                "-l",
                "127.0.0.1",
                "-p",
                Integer.toString(port),
                "-U",
                "0",
                "-m",
                Integer.toString(memoryMb),
                "-t",
                "2"));
        if ("root".equals(System.getProperty("user.name"))) {
            cmd.addAll(List.of("-u", "root")); // memcached refuses to run as root without -u
        }
        cmd.addAll(extraArgs);
        if (memoryMb < 8) {
            // A tiny cache: small slab pages so that several size classes fit in it at all.
            cmd.addAll(List.of("-o", "slab_chunk_max=16384", "-I", "16k"));
        }
        Process p = spawn(cmd, logFile);
        awaitReady(p, Timing.scale(START_TIMEOUT), Duration.ofMillis(20), "answer", this::isUp, logFile, "");
    }

    private boolean isUp() {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress("127.0.0.1", port), 500);
            s.setSoTimeout(500);
            s.getOutputStream().write("mn\r\n".getBytes(StandardCharsets.US_ASCII));
            String reply = readLine(s.getInputStream());
            return reply.equals("MN") || reply.equals("CLIENT_ERROR unauthenticated"); // the latter: -Y
        } catch (IOException e) {
            return false;
        }
    }

    /** The memcached binary, or an exception saying how to get one. */
    static String binary() {
        return binary("memcached", BINARY_PROPERTY, "DLOCK_MEMCACHED", "memcached");
    }
}

package io.dlock.testkit;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Serves a {@link FencedStore} over TCP on 127.0.0.1, so that lock clients in other JVMs (which a
 * test pauses or kills) use one store whose history the test then checks. {@link Client} speaks
 * the protocol: one request line, one response line, UTF-8:
 *
 * <pre>
 * READ &lt;client&gt; &lt;token&gt;           -&gt; VALUE &lt;value&gt; | REJECTED &lt;highestToken&gt;
 * WRITE &lt;client&gt; &lt;token&gt; &lt;value&gt;  -&gt; OK | REJECTED &lt;highestToken&gt;
 * ENTER &lt;client&gt; &lt;token&gt; &lt;READ|WRITE|PERMITS&gt; &lt;permits&gt;
 *                                 -&gt; ADMITTED | VIOLATION | STALE | MISUSE
 * LEAVE &lt;client&gt; &lt;token&gt;          -&gt; LEFT | STALE | NOT_INSIDE
 * anything else                   -&gt; ERROR &lt;reason&gt; (changes nothing)
 * </pre>
 *
 * <p>ENTER and LEAVE go to the {@link OccupancyStore} given to {@link #start(FencedStore,
 * OccupancyStore)}, which checks a shared primitive's rule (readers beside readers only, never more
 * permits than the total) and, when fenced, refuses stale holders; without one they are answered
 * with ERROR.
 *
 * <p>One daemon thread per connection, bounded by {@link #MAX_CONNECTIONS}.
 *
 * <p>Thread-safety: safe from any thread.
 */
public final class FencedStoreServer implements AutoCloseable {

    /*
     * Concurrency: the store serializes accesses; connections only parse and answer. Failure: a
     * malformed line gets ERROR and the connection stays open; an I/O error ends that connection
     * only. Invariants: after close() nothing listens and every connection thread ends.
     */

    /** The most connections served at once; more are closed on accept. */
    public static final int MAX_CONNECTIONS = 256;

    private static final Logger LOG = LoggerFactory.getLogger(FencedStoreServer.class);
    private static final Pattern CLIENT = Pattern.compile("[A-Za-z0-9_.:#-]{1,64}");
    private static final int MAX_LINE = 256;

    private final FencedStore store;
    private final @Nullable OccupancyStore occupancy;
    private final ServerSocket listener;
    private final Set<Socket> sockets = ConcurrentHashMap.newKeySet();
    private final List<Thread> threads = new ArrayList<>();
    private final AtomicBoolean closed = new AtomicBoolean();

    private FencedStoreServer(FencedStore store, @Nullable OccupancyStore occupancy, ServerSocket listener) {
        this.store = store;
        this.occupancy = occupancy;
        this.listener = listener;
    }

    /**
     * Serves {@code store} on a free 127.0.0.1 port.
     *
     * <p>Blocking: until the port is bound. Thread-safety: safe from any thread. On failure: {@link
     * UncheckedIOException} if no port can be bound; nothing is left open.
     *
     * @param store the store to serve
     * @return the running server
     * @throws UncheckedIOException if it cannot listen
     */
    public static FencedStoreServer start(FencedStore store) {
        return start(store, null);
    }

    /**
     * Serves {@code store} and, for ENTER and LEAVE, {@code occupancy} on a free 127.0.0.1 port.
     *
     * <p>Blocking: until the port is bound. Thread-safety: safe from any thread. On failure: {@link
     * UncheckedIOException} if no port can be bound; nothing is left open.
     *
     * @param store the store READ and WRITE go to
     * @param occupancy the store ENTER and LEAVE go to, or null to answer them with ERROR
     * @return the running server
     * @throws UncheckedIOException if it cannot listen
     */
    public static FencedStoreServer start(FencedStore store, @Nullable OccupancyStore occupancy) {
        Objects.requireNonNull(store, "store");
        ServerSocket socket = null;
        try {
            socket = new ServerSocket();
            socket.bind(new InetSocketAddress(FreePorts.loopbackAddress(), 0), 64);
        } catch (IOException e) {
            if (socket != null) {
                try {
                    socket.close();
                } catch (IOException suppressed) {
                    e.addSuppressed(suppressed);
                }
            }
            throw new UncheckedIOException("fenced store: cannot listen on 127.0.0.1", e);
        }
        FencedStoreServer server = new FencedStoreServer(store, occupancy, socket);
        Thread acceptor = new Thread(server::acceptLoop, "dlock-fenced-store-" + socket.getLocalPort() + "-accept");
        acceptor.setDaemon(true);
        synchronized (server.threads) {
            server.threads.add(acceptor);
        }
        acceptor.start();
        return server;
    }

    /**
     * Returns the port the server listens on, on 127.0.0.1.
     *
     * @return the port
     */
    public int port() {
        return listener.getLocalPort();
    }

    /**
     * Returns the store being served.
     *
     * @return the store
     */
    public FencedStore store() {
        return store;
    }

    /**
     * Returns the occupancy store ENTER and LEAVE go to, if any.
     *
     * @return the store, or empty
     */
    public java.util.Optional<OccupancyStore> occupancy() {
        return java.util.Optional.ofNullable(occupancy);
    }

    /**
     * Answers one request line exactly as the network protocol does.
     *
     * <p>Blocking: never (one store access). Thread-safety: safe from any thread. On failure: a
     * malformed request returns {@code ERROR <reason>} and changes nothing.
     *
     * @param line the request, without its terminator
     * @return the response, without its terminator
     */
    public String handle(String line) {
        if (line.length() > MAX_LINE) {
            return "ERROR line longer than " + MAX_LINE + " characters";
        }
        String[] parts = line.trim().split("\\s+");
        switch (parts[0]) {
            case "READ" -> {
                if (parts.length != 3) {
                    return "ERROR usage: READ <client> <token>";
                }
                String error = checkClient(parts[1]);
                Long token = number(parts[2]);
                if (error != null || token == null) {
                    return error != null ? error : "ERROR token must be a number, got '" + abbreviate(parts[2]) + "'";
                }
                OptionalLong value = store.read(parts[1], token);
                return value.isPresent() ? "VALUE " + value.getAsLong() : "REJECTED " + store.highestToken();
            }
            case "WRITE" -> {
                if (parts.length != 4) {
                    return "ERROR usage: WRITE <client> <token> <value>";
                }
                String error = checkClient(parts[1]);
                Long token = number(parts[2]);
                Long value = number(parts[3]);
                if (error != null || token == null || value == null) {
                    return error != null ? error : "ERROR token and value must be numbers";
                }
                return store.write(parts[1], token, value) ? "OK" : "REJECTED " + store.highestToken();
            }
            case "ENTER" -> {
                if (parts.length != 5) {
                    return "ERROR usage: ENTER <client> <token> <READ|WRITE|PERMITS> <permits>";
                }
                OccupancyStore occ = occupancy;
                if (occ == null) {
                    return "ERROR this store checks no shared primitive (no occupancy store)";
                }
                String error = checkClient(parts[1]);
                Long token = number(parts[2]);
                Long permits = number(parts[4]);
                OccupancyStore.Mode mode = mode(parts[3]);
                if (error != null) {
                    return error;
                }
                if (token == null || permits == null || mode == null || permits < 1 || permits > Integer.MAX_VALUE) {
                    return "ERROR token and permits must be numbers (permits >= 1), mode READ, WRITE or PERMITS";
                }
                try {
                    return occ.admit(parts[1], token, mode, (int) (long) permits)
                            .name();
                } catch (IllegalArgumentException e) {
                    return "ERROR " + e.getMessage();
                }
            }
            case "LEAVE" -> {
                if (parts.length != 3) {
                    return "ERROR usage: LEAVE <client> <token>";
                }
                OccupancyStore occ = occupancy;
                if (occ == null) {
                    return "ERROR this store checks no shared primitive (no occupancy store)";
                }
                String error = checkClient(parts[1]);
                Long token = number(parts[2]);
                if (error != null || token == null) {
                    return error != null ? error : "ERROR token must be a number, got '" + abbreviate(parts[2]) + "'";
                }
                return occ.exit(parts[1], token).name();
            }
            default -> {
                return "ERROR unknown request '" + abbreviate(parts[0]) + "'; expected READ, WRITE, ENTER or LEAVE";
            }
        }
    }

    /**
     * Stops listening and closes every connection; idempotent.
     *
     * <p>Blocking: up to about a second per connection thread still running. Thread-safety: safe
     * from any thread. On failure: never throws.
     */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        closeQuietly(listener);
        for (Socket s : sockets) {
            closeQuietly(s);
        }
        List<Thread> all;
        synchronized (threads) {
            all = List.copyOf(threads);
        }
        for (Thread t : all) {
            try {
                t.join(1_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    @Override
    public String toString() {
        return "FencedStoreServer[127.0.0.1:" + port() + ", " + store + "]";
    }

    private void acceptLoop() {
        while (!closed.get()) {
            Socket socket;
            try {
                socket = listener.accept();
            } catch (IOException e) {
                if (!closed.get()) {
                    LOG.warn("{}: accept failed, no longer accepting", this, e);
                }
                return;
            }
            if (sockets.size() >= MAX_CONNECTIONS) {
                closeQuietly(socket);
                continue;
            }
            sockets.add(socket);
            Thread t = new Thread(() -> serve(socket), "dlock-fenced-store-" + port() + "-" + socket.getPort());
            t.setDaemon(true);
            synchronized (threads) {
                threads.removeIf(old -> !old.isAlive());
                threads.add(t);
            }
            if (closed.get()) {
                closeQuietly(socket);
            }
            t.start();
        }
    }

    private void serve(Socket socket) {
        try (socket;
                BufferedReader in =
                        new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));
                Writer out = new OutputStreamWriter(socket.getOutputStream(), StandardCharsets.UTF_8)) {
            socket.setTcpNoDelay(true);
            String line;
            while ((line = in.readLine()) != null) {
                out.write(handle(line));
                out.write('\n');
                out.flush();
            }
        } catch (IOException e) {
            LOG.debug("fenced store connection ended: {}", e.toString());
        } finally {
            sockets.remove(socket);
        }
    }

    private static @Nullable String checkClient(String client) {
        return CLIENT.matcher(client).matches()
                ? null
                : "ERROR client must be 1 to 64 characters from A-Z a-z 0-9 _ . : # -, got '" + abbreviate(client)
                        + "'";
    }

    private static OccupancyStore.@Nullable Mode mode(String text) {
        for (OccupancyStore.Mode m : OccupancyStore.Mode.values()) {
            if (m.name().equals(text)) {
                return m;
            }
        }
        return null;
    }

    private static @Nullable Long number(String text) {
        try {
            return Long.parseLong(text);
        } catch (NumberFormatException e) {
            return null;
        }
    }

    private static String abbreviate(String text) {
        return text.length() <= 20 ? text : text.substring(0, 20) + "...";
    }

    private static void closeQuietly(AutoCloseable c) {
        try {
            c.close();
        } catch (Exception e) {
            LOG.debug("close failed: {}", e.toString());
        }
    }

    /**
     * One connection to a {@link FencedStoreServer}.
     *
     * <p>Thread-safety: not thread-safe; one thread per client (requests share one socket).
     */
    public static final class Client implements AutoCloseable {
        private final Socket socket;
        private final BufferedReader in;
        private final Writer out;
        private final String name;

        private Client(Socket socket, String name) throws IOException {
            this.socket = socket;
            this.name = name;
            this.in = new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));
            this.out = new OutputStreamWriter(socket.getOutputStream(), StandardCharsets.UTF_8);
        }

        /**
         * Connects to a store server on 127.0.0.1.
         *
         * <p>Blocking: until connected, at most 5 s. Thread-safety: safe from any thread. On
         * failure: {@link UncheckedIOException}; nothing stays open.
         *
         * @param port the server's port
         * @param name this client's name in the store's history: 1 to 64 of {@code A-Z a-z 0-9 _ .
         *     : # -}
         * @return the connected client
         * @throws IllegalArgumentException if {@code name} is not allowed
         * @throws UncheckedIOException if the server cannot be reached
         */
        public static Client connect(int port, String name) {
            return connect(FreePorts.loopbackAddress(), port, name);
        }

        /**
         * Connects to a store server at {@code host} (for a client in a {@link NetworkNamespace},
         * through a proxy on its host side).
         *
         * <p>Blocking: until connected, at most 5 s. Thread-safety: safe from any thread. On
         * failure: {@link UncheckedIOException}; nothing stays open.
         *
         * @param host the address to connect to
         * @param port the port there
         * @param name this client's name, as for {@link #connect(int, String)}
         * @return the connected client
         * @throws IllegalArgumentException if {@code name} is not allowed
         * @throws UncheckedIOException if the server cannot be reached
         */
        public static Client connect(InetAddress host, int port, String name) {
            if (name == null || !CLIENT.matcher(name).matches()) {
                throw new IllegalArgumentException(
                        "name must be 1 to 64 characters from A-Z a-z 0-9 _ . : # -, got '" + name + "'");
            }
            Socket socket = new Socket();
            try {
                socket.setTcpNoDelay(true);
                socket.setSoTimeout(30_000);
                socket.connect(new InetSocketAddress(host, port), 5_000);
                return new Client(socket, name);
            } catch (IOException e) {
                closeQuietly(socket);
                throw new UncheckedIOException(
                        "fenced store " + host.getHostAddress() + ":" + port + " unreachable", e);
            }
        }

        /**
         * Reads the value with a fencing token.
         *
         * <p>Blocking: one round trip, at most 30 s. Thread-safety: one thread at a time. On
         * failure: {@link UncheckedIOException} if the connection fails, {@link
         * IllegalStateException} for an unexpected answer.
         *
         * @param token the lease's fencing token
         * @return the value, or empty if the store refused the token as stale
         */
        public OptionalLong read(long token) {
            String response = request("READ " + name + " " + token);
            if (response.startsWith("VALUE ")) {
                return OptionalLong.of(Long.parseLong(response.substring(6).trim()));
            }
            if (response.startsWith("REJECTED ")) {
                return OptionalLong.empty();
            }
            throw new IllegalStateException("READ: unexpected response '" + response + "'");
        }

        /**
         * Writes a value with a fencing token.
         *
         * <p>Blocking: one round trip, at most 30 s. Thread-safety: one thread at a time. On
         * failure: {@link UncheckedIOException} if the connection fails, {@link
         * IllegalStateException} for an unexpected answer.
         *
         * @param token the lease's fencing token
         * @param value the new value
         * @return true if the store took the write, false if it refused the token as stale
         */
        public boolean write(long token, long value) {
            String response = request("WRITE " + name + " " + token + " " + value);
            if (response.equals("OK")) {
                return true;
            }
            if (response.startsWith("REJECTED ")) {
                return false;
            }
            throw new IllegalStateException("WRITE: unexpected response '" + response + "'");
        }

        /**
         * Enters the occupancy store as a holder of a shared primitive.
         *
         * <p>Blocking: one round trip, at most 30 s. Thread-safety: one thread at a time. On
         * failure: {@link UncheckedIOException} if the connection fails, {@link
         * IllegalStateException} for an unexpected answer (such as a server without an occupancy
         * store).
         *
         * @param token the lease's fencing token
         * @param mode how the holder is inside
         * @param permits the permits held (1 for READ and WRITE)
         * @return what the store decided
         */
        public OccupancyStore.Admission enter(long token, OccupancyStore.Mode mode, int permits) {
            String response = request("ENTER " + name + " " + token + " " + mode.name() + " " + permits);
            try {
                return OccupancyStore.Admission.valueOf(response);
            } catch (IllegalArgumentException e) {
                throw new IllegalStateException("ENTER: unexpected response '" + response + "'", e);
            }
        }

        /**
         * Leaves the occupancy store.
         *
         * <p>Blocking: one round trip, at most 30 s. Thread-safety: one thread at a time. On
         * failure: {@link UncheckedIOException} if the connection fails, {@link
         * IllegalStateException} for an unexpected answer.
         *
         * @param token the token the holder entered with
         * @return what the store decided
         */
        public OccupancyStore.Exit leave(long token) {
            String response = request("LEAVE " + name + " " + token);
            try {
                return OccupancyStore.Exit.valueOf(response);
            } catch (IllegalArgumentException e) {
                throw new IllegalStateException("LEAVE: unexpected response '" + response + "'", e);
            }
        }

        private String request(String line) {
            try {
                out.write(line);
                out.write('\n');
                out.flush();
                String response = in.readLine();
                if (response == null) {
                    throw new IOException("the fenced store closed the connection");
                }
                return response;
            } catch (IOException e) {
                throw new UncheckedIOException("fenced store request '" + line + "' failed", e);
            }
        }

        /**
         * Closes the connection; idempotent.
         *
         * <p>Blocking: never. Thread-safety: safe from any thread. On failure: never throws.
         */
        @Override
        public void close() {
            closeQuietly(socket);
        }
    }
}

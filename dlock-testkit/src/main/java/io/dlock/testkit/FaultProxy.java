package io.dlock.testkit;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A TCP proxy on 127.0.0.1 placed between clients and one server, which injects network faults at
 * run time: added latency, a blackhole (connections are accepted and stay open, but bytes are
 * dropped silently, as in a network partition), connection resets, and refusal of new connections
 * (as from a server that is down). Latency and blackhole apply
 * per {@link Direction}, so one can lose only the server's replies (a request that succeeds but
 * whose answer never arrives).
 *
 * <p>A connection that lost bytes to a blackhole stays silent in that direction for the rest of its
 * life, even after {@link #pass()}: TCP never skips bytes, so resuming would hand the peer a corrupt
 * stream. This is what a partition longer than TCP's retransmission does; the client's own timeout
 * notices and its new connections work once the proxy passes again. A connection that one side
 * closes is closed on the other side too, even during a blackhole, which keeps the proxy's threads
 * bounded.
 *
 * <pre>{@code
 * try (FaultProxy proxy = FaultProxy.start(server.port())) {
 *     LockClient client = LockClient.connect("zookeeper://" + proxy.connectString() + "/app");
 *     proxy.blackhole(FaultProxy.Direction.BOTH);   // partition
 *     proxy.pass();                                 // heal
 *     proxy.resetConnections();                     // drop every connection with a RST
 *     proxy.silenceConnections();                   // a NAT forgets its flows: open ones go silent
 *     proxy.refuse();                               // reset new connections, as a down server
 * }
 * }</pre>
 *
 * <p>Each accepted connection opens one connection to the target and is served by four daemon
 * threads (a reader and a writer per direction) joined by a bounded queue, so latency delays each
 * chunk by the same amount without slowing the reader down. At most {@link #MAX_CONNECTIONS}
 * connections are open at once; further ones are closed on accept.
 *
 * <p>Thread-safety: safe from any thread; fault switches take effect for bytes read after the
 * switch and for bytes still queued inside the proxy.
 */
public final class FaultProxy implements AutoCloseable {

    /*
     * Concurrency: the fault of each direction is one immutable Rule in a volatile field, read by
     * every reader and writer per chunk. Links register in a concurrent set and remove themselves
     * when they end. close() stops the acceptor first, then closes every link; a link that
     * registers concurrently sees `closed` and closes itself.
     * Failure: an I/O error or EOF on either side ends the whole link (both sockets closed, so the
     * threads end); the proxy itself keeps accepting.
     * Invariants: links.size() <= MAX_CONNECTIONS; every thread the proxy starts ends once its
     * link or the proxy is closed.
     */

    /** The most connections open through one proxy; more are closed on accept. */
    public static final int MAX_CONNECTIONS = 256;

    /** The largest latency {@link #latency} accepts. */
    public static final Duration MAX_LATENCY = Duration.ofMinutes(1);

    private static final Logger LOG = LoggerFactory.getLogger(FaultProxy.class);
    private static final int CHUNK = 16 * 1024;
    private static final int QUEUED_CHUNKS = 256;
    private static final int CONNECT_TIMEOUT_MS = 5_000;
    private static final Duration JOIN_WAIT = Duration.ofSeconds(2);

    /** Which way bytes travel through the proxy. */
    public enum Direction {
        /** From the client to the server (requests). */
        UPSTREAM,
        /** From the server to the client (replies, notifications). */
        DOWNSTREAM,
        /** Both ways. */
        BOTH;

        boolean includes(Direction d) {
            return this == BOTH || this == d;
        }
    }

    /** What happens to the bytes of one direction. */
    public enum Mode {
        /** Forwarded at once. */
        PASS,
        /** Forwarded after a delay. */
        LATENCY,
        /** Dropped silently; the connection stays open. */
        BLACKHOLE
    }

    /**
     * The fault applied to one direction.
     *
     * @param mode what happens to the bytes
     * @param delay the added latency for {@link Mode#LATENCY}, zero otherwise
     */
    public record Rule(Mode mode, Duration delay) {
        static final Rule PASS = new Rule(Mode.PASS, Duration.ZERO);
        static final Rule BLACKHOLE = new Rule(Mode.BLACKHOLE, Duration.ZERO);
    }

    private final InetSocketAddress target;
    private final ServerSocket listener;
    private final Thread acceptor;
    private final Set<Link> links = ConcurrentHashMap.newKeySet();
    private final AtomicLong accepted = new AtomicLong();
    private final AtomicLong resets = new AtomicLong();
    private final AtomicLong droppedBytes = new AtomicLong();
    private final AtomicLong forwardedBytes = new AtomicLong();
    private volatile Rule upstream = Rule.PASS;
    private volatile Rule downstream = Rule.PASS;
    private volatile boolean refusing;
    private volatile boolean closed;

    @GuardedBy("this")
    private boolean closeStarted;

    private FaultProxy(InetSocketAddress target, ServerSocket listener) {
        this.target = target;
        this.listener = listener;
        this.acceptor = new Thread(this::acceptLoop, "dlock-fault-proxy-" + listener.getLocalPort() + "-accept");
        this.acceptor.setDaemon(true);
    }

    /**
     * Starts a proxy on a free 127.0.0.1 port in front of {@code 127.0.0.1:targetPort}, passing all
     * bytes.
     *
     * <p>Blocking: until the port is bound (the target is connected per client connection, not
     * now). Thread-safety: safe from any thread. On failure: {@link UncheckedIOException} if no
     * port can be bound; nothing is left open.
     *
     * @param targetPort the server's port on 127.0.0.1
     * @return the running proxy
     * @throws IllegalArgumentException if {@code targetPort} is not in 1..65535
     * @throws UncheckedIOException if the proxy cannot listen
     */
    public static FaultProxy start(int targetPort) {
        return start(new InetSocketAddress(FreePorts.loopbackAddress(), checkPort(targetPort)));
    }

    /**
     * Starts a proxy on a free 127.0.0.1 port in front of {@code target}, passing all bytes.
     *
     * <p>Blocking: until the port is bound. Thread-safety: safe from any thread. On failure: {@link
     * UncheckedIOException} if no port can be bound; nothing is left open.
     *
     * @param target the server's address; resolved now
     * @return the running proxy
     * @throws IllegalArgumentException if {@code target} cannot be resolved
     * @throws UncheckedIOException if the proxy cannot listen
     */
    public static FaultProxy start(InetSocketAddress target) {
        return start(target, FreePorts.loopbackAddress());
    }

    /**
     * Starts a proxy on a free port of {@code bindAddress} (for example a {@link NetworkNamespace}'s
     * {@link NetworkNamespace#hostAddress() host side}) in front of {@code target}.
     *
     * <p>Blocking: until the port is bound. Thread-safety: safe from any thread. On failure: {@link
     * UncheckedIOException} if no port can be bound; nothing is left open.
     *
     * @param target the server's address; resolved now
     * @param bindAddress a local address to listen on
     * @return the running proxy
     * @throws IllegalArgumentException if {@code target} cannot be resolved
     * @throws UncheckedIOException if the proxy cannot listen
     */
    public static FaultProxy start(InetSocketAddress target, InetAddress bindAddress) {
        Objects.requireNonNull(target, "target");
        if (target.isUnresolved()) {
            throw new IllegalArgumentException("cannot resolve the proxy target " + target);
        }
        @Nullable ServerSocket socket = null;
        try {
            socket = new ServerSocket();
            socket.bind(new InetSocketAddress(bindAddress, 0), 64);
        } catch (IOException e) {
            closeQuietly(socket);
            throw new UncheckedIOException("fault proxy: cannot listen on " + bindAddress.getHostAddress(), e);
        }
        FaultProxy proxy = new FaultProxy(target, socket);
        proxy.acceptor.start();
        LOG.debug("{} started", proxy);
        return proxy;
    }

    /**
     * Returns the port clients connect to.
     *
     * @return the proxy's port on its address (127.0.0.1 unless started with another)
     */
    public int port() {
        return listener.getLocalPort();
    }

    /**
     * Returns {@code "127.0.0.1:PORT"} (or the address it was started on), the address clients
     * connect to instead of the server's.
     *
     * @return host and port separated by a colon
     */
    public String connectString() {
        return listener.getInetAddress().getHostAddress() + ":" + port();
    }

    /**
     * Returns the server address the proxy forwards to.
     *
     * @return the target address
     */
    public InetSocketAddress target() {
        return target;
    }

    /**
     * Clears every fault: new connections are accepted, bytes flow both ways at once, including
     * bytes still queued; connections that lost bytes to a blackhole stay silent (see the class
     * description).
     */
    public void pass() {
        upstream = Rule.PASS;
        downstream = Rule.PASS;
        refusing = false;
    }

    /**
     * Resets every new connection as soon as it is accepted, as a host whose server is down
     * answers with a reset: a client fails over to its next server at once, where a {@link
     * #blackhole} would hold it until its own timeout. Open connections keep their faults; {@link
     * #pass()} ends the refusal.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: never fails.
     */
    public void refuse() {
        refusing = true;
        LOG.debug("{}: refusing new connections", this);
    }

    /**
     * Delays every chunk travelling in {@code direction} by {@code delay}; the other direction
     * keeps its fault.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: {@link
     * IllegalArgumentException} for a negative or too long delay; nothing changes.
     *
     * @param direction which way to delay
     * @param delay the added latency, 0 to {@link #MAX_LATENCY}; {@link Duration#ZERO} means pass
     * @throws IllegalArgumentException if {@code delay} is negative or above {@link #MAX_LATENCY}
     */
    public void latency(Direction direction, Duration delay) {
        Objects.requireNonNull(direction, "direction");
        Objects.requireNonNull(delay, "delay");
        if (delay.isNegative() || delay.compareTo(MAX_LATENCY) > 0) {
            throw new IllegalArgumentException("delay must be between 0 and " + MAX_LATENCY + ", was " + delay);
        }
        set(direction, delay.isZero() ? Rule.PASS : new Rule(Mode.LATENCY, delay));
    }

    /**
     * Drops every byte travelling in {@code direction}, silently: connections stay open and new
     * ones are still accepted, as in a network partition; the other direction keeps its fault.
     * Bytes already queued inside the proxy are dropped too.
     *
     * @param direction which way to drop
     */
    public void blackhole(Direction direction) {
        Objects.requireNonNull(direction, "direction");
        set(direction, Rule.BLACKHOLE);
    }

    /**
     * Closes every open connection with a TCP reset on both sides (the client and the server see
     * "connection reset"); new connections are accepted as before.
     *
     * <p>Blocking: never (closing sockets). Thread-safety: safe from any thread. On failure: never
     * throws.
     *
     * @return how many connections were reset
     */
    public int resetConnections() {
        int n = 0;
        for (Link link : List.copyOf(links)) {
            if (link.close(true)) {
                n++;
            }
        }
        resets.addAndGet(n);
        return n;
    }

    /**
     * Makes every open connection silent for the rest of its life, both ways, while new
     * connections are accepted and forwarded as the rules say: what a NAT or firewall that drops
     * its idle flows does (the old flow is dead, a new one works). A silent connection forwards no
     * byte in either direction and sends neither FIN nor RST to either side, even when one side
     * closes it: the other side keeps its connection open until the proxy closes; its own timeouts
     * or keepalive must notice. The rules ({@link #pass()}, {@link #blackhole}) do not revive it.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: never throws.
     *
     * @return how many connections were silenced
     */
    public int silenceConnections() {
        int n = 0;
        for (Link link : List.copyOf(links)) {
            if (link.silence()) {
                n++;
            }
        }
        LOG.debug("{}: silenced {} connections", this, n);
        return n;
    }

    /**
     * Returns the fault currently applied to one direction.
     *
     * @param direction {@link Direction#UPSTREAM} or {@link Direction#DOWNSTREAM}
     * @return the rule
     * @throws IllegalArgumentException for {@link Direction#BOTH}
     */
    public Rule rule(Direction direction) {
        return switch (Objects.requireNonNull(direction, "direction")) {
            case UPSTREAM -> upstream;
            case DOWNSTREAM -> downstream;
            case BOTH -> throw new IllegalArgumentException("ask for UPSTREAM or DOWNSTREAM, not BOTH");
        };
    }

    /**
     * Returns how many connections are open through the proxy now.
     *
     * @return the count
     */
    public int openConnections() {
        return links.size();
    }

    /**
     * Returns how many client connections the proxy has accepted since it started.
     *
     * @return the count, including connections refused or closed at once for exceeding the limit
     */
    public long acceptedConnections() {
        return accepted.get();
    }

    /**
     * Returns how many bytes a blackhole has dropped since the proxy started.
     *
     * @return the byte count
     */
    public long droppedBytes() {
        return droppedBytes.get();
    }

    /**
     * Returns how many bytes the proxy has delivered, both directions together.
     *
     * @return the byte count
     */
    public long forwardedBytes() {
        return forwardedBytes.get();
    }

    /**
     * Stops accepting, closes every connection and waits briefly for the proxy's threads to end.
     *
     * <p>Blocking: up to about 2 s per thread still running (normally none). Thread-safety: safe
     * from any thread; idempotent. On failure: never throws; a thread that does not end is logged.
     */
    @Override
    public void close() {
        synchronized (this) {
            if (closeStarted) {
                return;
            }
            closeStarted = true;
        }
        closed = true;
        closeQuietly(listener);
        List<Thread> threads = new ArrayList<>();
        threads.add(acceptor);
        for (Link link : List.copyOf(links)) {
            link.close(false);
            threads.addAll(link.threads);
        }
        for (Thread t : threads) {
            try {
                t.join(JOIN_WAIT.toMillis());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
            if (t.isAlive()) {
                LOG.warn("{}: thread {} did not end", this, t.getName());
            }
        }
    }

    @Override
    public String toString() {
        return "FaultProxy[" + connectString() + " -> " + target.getAddress().getHostAddress() + ":" + target.getPort()
                + ", up=" + upstream.mode() + ", down=" + downstream.mode() + (refusing ? ", refusing" : "") + "]";
    }

    private void set(Direction direction, Rule rule) {
        if (direction.includes(Direction.UPSTREAM)) {
            upstream = rule;
        }
        if (direction.includes(Direction.DOWNSTREAM)) {
            downstream = rule;
        }
        LOG.debug("{}: {} -> {}", this, direction, rule);
    }

    private Rule current(Direction direction) {
        return direction == Direction.UPSTREAM ? upstream : downstream;
    }

    private void acceptLoop() {
        while (!closed) {
            Socket client;
            try {
                client = listener.accept();
            } catch (IOException e) {
                if (!closed) {
                    LOG.warn("{}: accept failed, no longer accepting", this, e);
                }
                return;
            }
            accepted.incrementAndGet();
            if (refusing) {
                reset(client);
                continue;
            }
            if (links.size() >= MAX_CONNECTIONS) {
                LOG.warn("{}: {} connections open, closing a new one", this, MAX_CONNECTIONS);
                closeQuietly(client);
                continue;
            }
            Socket server = new Socket();
            try {
                client.setTcpNoDelay(true);
                server.setTcpNoDelay(true);
                // Connecting here, on the acceptor, keeps the order of connections; the target is
                // on loopback, so this takes microseconds or fails at once.
                server.connect(target, CONNECT_TIMEOUT_MS);
                if (server.getLocalSocketAddress().equals(server.getRemoteSocketAddress())) {
                    // TCP self-connect: the target is down and the kernel picked its port as our
                    // ephemeral port. Holding it would keep the restarted server from binding.
                    throw new IOException("self-connected to " + target + " (the target is down)");
                }
            } catch (IOException e) {
                LOG.debug("{}: cannot reach the target: {}", this, e.toString());
                closeQuietly(server);
                reset(client); // the server is down: the client sees a reset, as without a proxy
                continue;
            }
            Link link = new Link(client, server);
            links.add(link);
            if (closed) {
                link.close(false);
                continue;
            }
            link.start();
        }
    }

    /** One client connection and its connection to the target. */
    private final class Link {
        final Socket client;
        final Socket server;
        final List<Thread> threads = new ArrayList<>(4);
        private final AtomicBoolean done = new AtomicBoolean();
        private final Pipe up;
        private final Pipe down;
        /** Set by {@link #silenceConnections()}: nothing passes, and an end on one side is not passed on. */
        private volatile boolean silent;

        Link(Socket client, Socket server) {
            this.client = client;
            this.server = server;
            String name = "dlock-fault-proxy-" + port() + "-" + client.getPort();
            up = new Pipe(Direction.UPSTREAM, client, server);
            down = new Pipe(Direction.DOWNSTREAM, server, client);
            threads.add(daemon(up::read, name + "-up-read"));
            threads.add(daemon(up::write, name + "-up-write"));
            threads.add(daemon(down::read, name + "-down-read"));
            threads.add(daemon(down::write, name + "-down-write"));
        }

        void start() {
            for (Thread t : threads) {
                t.start();
            }
        }

        /** Silences the link for good; false if it had ended or was silent already. */
        boolean silence() {
            if (done.get() || silent) {
                return false;
            }
            up.severed = true;
            down.severed = true;
            silent = true;
            return true;
        }

        /**
         * A pipe ended (EOF or an error on one side): closes the link, unless it is silent, where the
         * end is not passed on (the proxy closes it when it closes).
         */
        void ended() {
            if (!silent) {
                close(false);
            }
        }

        /** Closes both sockets (with a reset if asked); true if this call closed the link. */
        boolean close(boolean reset) {
            if (!done.compareAndSet(false, true)) {
                return false;
            }
            links.remove(this);
            if (reset) {
                reset(client);
                reset(server);
            } else {
                closeQuietly(client);
                closeQuietly(server);
            }
            for (Thread t : threads) {
                t.interrupt(); // wakes a writer waiting on its queue or its delay
            }
            return true;
        }

        /** One direction: a reader filling a bounded queue and a writer draining it. */
        private final class Pipe {
            private final Direction direction;
            private final Socket from;
            private final Socket to;
            private final BlockingQueue<Chunk> queue = new ArrayBlockingQueue<>(QUEUED_CHUNKS);
            // Set once this direction dropped bytes: a TCP stream cannot skip bytes, so delivering
            // later ones would hand the peer a corrupt stream. It stays silent instead, as a TCP
            // connection that a long partition killed does, and the peer's timeouts take over.
            private volatile boolean severed;

            Pipe(Direction direction, Socket from, Socket to) {
                this.direction = direction;
                this.from = from;
                this.to = to;
            }

            void read() {
                byte[] buffer = new byte[CHUNK];
                try {
                    InputStream in = from.getInputStream();
                    while (true) {
                        int n = in.read(buffer);
                        if (n < 0) {
                            break;
                        }
                        Rule rule = current(direction);
                        if (rule.mode() == Mode.BLACKHOLE || severed) {
                            severed = true;
                            droppedBytes.addAndGet(n);
                            continue;
                        }
                        long due = System.nanoTime() + rule.delay().toNanos();
                        queue.put(new Chunk(Arrays.copyOf(buffer, n), due)); // blocks when full: back-pressure
                    }
                } catch (IOException | InterruptedException e) {
                    // closed, reset, or the proxy is closing
                }
                ended();
            }

            void write() {
                try {
                    OutputStream out = to.getOutputStream();
                    while (true) {
                        Chunk chunk = queue.take();
                        long wait = chunk.due() - System.nanoTime();
                        if (wait > 0) {
                            TimeUnit.NANOSECONDS.sleep(wait);
                        }
                        if (current(direction).mode() == Mode.BLACKHOLE || severed) {
                            severed = true;
                            droppedBytes.addAndGet(chunk.data().length); // in flight when the partition began
                            continue;
                        }
                        out.write(chunk.data());
                        out.flush();
                        forwardedBytes.addAndGet(chunk.data().length);
                    }
                } catch (IOException | InterruptedException e) {
                    // closed, reset, or the proxy is closing
                }
                ended();
            }
        }
    }

    private record Chunk(byte[] data, long due) {}

    private static Thread daemon(Runnable body, String name) {
        Thread t = new Thread(body, name);
        t.setDaemon(true);
        return t;
    }

    private static void reset(Socket socket) {
        try {
            socket.setSoLinger(true, 0); // close() then sends RST instead of FIN
        } catch (SocketException e) {
            // already closed
        }
        closeQuietly(socket);
    }

    private static void closeQuietly(@Nullable AutoCloseable closeable) {
        if (closeable == null) {
            return;
        }
        try {
            closeable.close();
        } catch (Exception e) {
            LOG.debug("close failed: {}", e.toString());
        }
    }

    private static int checkPort(int port) {
        if (port < 1 || port > 65_535) {
            throw new IllegalArgumentException("targetPort must be in 1..65535, was " + port);
        }
        return port;
    }
}

package io.dlock.cli.internal;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A tiny TCP stock service, the resource that {@code dlock demo} protects: one integer (the number
 * of items in stock) behind a line protocol on a free {@code 127.0.0.1} port. Each request is one
 * line and gets one response line (UTF-8, {@code \n}-terminated):
 *
 * <pre>
 * GET                                      -&gt; STOCK &lt;n&gt;
 * PUT &lt;newValue&gt; &lt;client&gt; &lt;fencingToken&gt;   -&gt; OK | REJECTED &lt;highestToken&gt;
 * anything else                            -&gt; ERROR &lt;reason&gt;    (changes nothing)
 * </pre>
 *
 * <p>In fenced mode a {@code PUT} whose token is lower than the highest token accepted so far is
 * rejected (equal tokens are accepted: the same grant may write twice). Unfenced, every well-formed
 * {@code PUT} is accepted, as a plain database would.
 *
 * <p>Selling: a worker reads the stock with {@code GET}, ships one item and writes back what it read
 * minus one. So every accepted {@code PUT} whose value is lower than the stock that connection last
 * read (or than the current stock, if it has not read) counts as one item sold, attributed to the
 * {@code PUT}'s client. A lost update (two workers read 5 and both write 4) therefore shows up as
 * two items sold for one unit of stock: {@link Snapshot#oversold()} is items sold minus the initial
 * stock, never negative.
 *
 * <p>Concurrency: one thread per connection; every request runs under {@code this}, so requests are
 * atomic and totally ordered. Invariants: {@code highestToken} is the largest token of an accepted
 * {@code PUT} (0 before any); a rejected or malformed request changes no state except the
 * rejection log.
 *
 * <p>Thread-safety: safe for use from any thread.
 */
public final class StockServer implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(StockServer.class);
    private static final Pattern CLIENT = Pattern.compile("[A-Za-z0-9_.:-]{1,64}");
    private static final int MAX_LINE = 256;

    private final int initialStock;
    private final boolean fenced;
    private final ServerSocket serverSocket;
    private final ExecutorService connections;
    private final Set<Socket> sockets = ConcurrentHashMap.newKeySet();
    private final Thread acceptor;

    @GuardedBy("this")
    private int stock;

    @GuardedBy("this")
    private long highestToken;

    @GuardedBy("this")
    private int sold;

    @GuardedBy("this")
    private final Map<String, Integer> soldByClient = new LinkedHashMap<>();

    @GuardedBy("this")
    private final List<Long> acceptedTokens = new ArrayList<>();

    @GuardedBy("this")
    private final List<Rejection> rejections = new ArrayList<>();

    // One per PUT: at most a few per item in stock (MAX_STOCK bounds it), for the report's timeline.
    @GuardedBy("this")
    private final List<Sale> sales = new ArrayList<>();

    private volatile boolean closed;

    private StockServer(int initialStock, boolean fenced, ServerSocket serverSocket) {
        this.initialStock = initialStock;
        this.fenced = fenced;
        this.serverSocket = serverSocket;
        synchronized (this) {
            this.stock = initialStock;
        }
        AtomicInteger count = new AtomicInteger();
        this.connections = Executors.newCachedThreadPool(runnable -> {
            Thread thread = new Thread(
                    runnable, "stock-server-" + serverSocket.getLocalPort() + "-conn-" + count.incrementAndGet());
            thread.setDaemon(true);
            return thread;
        });
        this.acceptor = new Thread(this::acceptLoop, "stock-server-" + serverSocket.getLocalPort() + "-accept");
        this.acceptor.setDaemon(true);
    }

    /**
     * Starts a stock server holding {@code initialStock} items on a free {@code 127.0.0.1} port.
     *
     * <p>Blocking: until the port is bound. Thread-safety: safe from any thread. On failure: throws,
     * and nothing is left listening.
     *
     * @param initialStock the number of items in stock, zero or more
     * @param fenced whether a {@code PUT} with a token lower than the highest accepted one is
     *     rejected
     * @return the running server; close it when done
     * @throws IllegalArgumentException if {@code initialStock} is negative
     * @throws UncheckedIOException if no port can be bound
     */
    public static StockServer start(int initialStock, boolean fenced) {
        if (initialStock < 0) {
            throw new IllegalArgumentException("initialStock must be >= 0, got " + initialStock);
        }
        ServerSocket socket;
        try {
            socket = new ServerSocket();
            try {
                socket.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 64);
            } catch (IOException e) {
                socket.close();
                throw e;
            }
        } catch (IOException e) {
            throw new UncheckedIOException("stock server: cannot bind a loopback port", e);
        }
        StockServer server = new StockServer(initialStock, fenced, socket);
        server.acceptor.start();
        LOG.debug("stock server on 127.0.0.1:{} (stock {}, fenced {})", socket.getLocalPort(), initialStock, fenced);
        return server;
    }

    /**
     * The port the server listens on, on {@code 127.0.0.1}.
     *
     * @return the TCP port
     */
    public int port() {
        return serverSocket.getLocalPort();
    }

    /**
     * Whether this server rejects writes carrying a token lower than the highest it accepted.
     *
     * @return true in fenced mode
     */
    public boolean fenced() {
        return fenced;
    }

    /**
     * A consistent copy of the server's counters.
     *
     * <p>Blocking: while a request is being handled. Thread-safety: safe from any thread. On failure:
     * cannot fail.
     *
     * @return the current state
     */
    public synchronized Snapshot snapshot() {
        return new Snapshot(
                initialStock,
                stock,
                fenced,
                sold,
                highestToken,
                Collections.unmodifiableMap(new LinkedHashMap<>(soldByClient)),
                List.copyOf(acceptedTokens),
                List.copyOf(rejections));
    }

    /**
     * Handles one request line for one connection and returns the response line, exactly as the
     * network protocol does.
     *
     * <p>Blocking: while another request is being handled. Thread-safety: safe from any thread;
     * requests are atomic. On failure: a malformed request returns {@code ERROR <reason>} and
     * changes nothing.
     *
     * @param session the connection's state (what it last read)
     * @param line the request line, without its terminator
     * @return the response line, without its terminator
     */
    synchronized String handle(Session session, String line) {
        if (line.length() > MAX_LINE) {
            return "ERROR line longer than " + MAX_LINE + " characters";
        }
        String[] parts = line.trim().split("\\s+");
        String command = parts[0];
        if (command.equals("GET")) {
            if (parts.length != 1) {
                return "ERROR usage: GET";
            }
            session.lastRead = stock;
            session.lastReadAt = System.nanoTime();
            return "STOCK " + stock;
        }
        if (command.equals("PUT")) {
            return put(session, parts);
        }
        if (command.isEmpty()) {
            return "ERROR empty request; expected GET or PUT <newValue> <client> <fencingToken>";
        }
        return "ERROR unknown command '" + abbreviate(command)
                + "'; expected GET or PUT <newValue> <client> <fencingToken>";
    }

    @GuardedBy("this")
    private String put(Session session, String[] parts) {
        if (parts.length != 4) {
            return "ERROR usage: PUT <newValue> <client> <fencingToken>";
        }
        int newValue;
        long token;
        try {
            newValue = Integer.parseInt(parts[1]);
        } catch (NumberFormatException e) {
            return "ERROR newValue must be a number, got '" + abbreviate(parts[1]) + "'";
        }
        if (newValue < 0) {
            return "ERROR newValue must be >= 0, got " + newValue;
        }
        String client = parts[2];
        if (!CLIENT.matcher(client).matches()) {
            return "ERROR client must be 1 to 64 characters from A-Z a-z 0-9 _ . : -, got '" + abbreviate(client) + "'";
        }
        try {
            token = Long.parseLong(parts[3]);
        } catch (NumberFormatException e) {
            return "ERROR fencingToken must be a number, got '" + abbreviate(parts[3]) + "'";
        }
        if (token < 0) {
            return "ERROR fencingToken must be >= 0, got " + token;
        }
        long now = System.nanoTime();
        long from = session.lastRead >= 0 ? session.lastReadAt : now;
        if (fenced && token < highestToken) {
            sales.add(new Sale(client, token, from, now, Sale.Outcome.REJECTED));
            rejections.add(new Rejection(client, token, highestToken, newValue, stock));
            LOG.debug("rejected PUT {} from {}: token {} < {}", newValue, client, token, highestToken);
            return "REJECTED " + highestToken;
        }
        int reference = session.lastRead >= 0 ? session.lastRead : stock;
        sales.add(new Sale(
                client, token, from, now, reference == stock ? Sale.Outcome.ACCEPTED : Sale.Outcome.OVERWROTE));
        if (newValue < reference) {
            sold++;
            soldByClient.merge(client, 1, Integer::sum);
        }
        stock = newValue;
        highestToken = Math.max(highestToken, token);
        acceptedTokens.add(token);
        session.lastRead = -1;
        return "OK";
    }

    private static String abbreviate(String text) {
        return text.length() <= 20 ? text : text.substring(0, 20) + "...";
    }

    private void acceptLoop() {
        while (!closed) {
            Socket socket;
            try {
                socket = serverSocket.accept();
            } catch (IOException e) {
                if (!closed) {
                    LOG.warn("stock server on port {}: accept failed, stopping", port(), e);
                }
                return;
            }
            sockets.add(socket);
            try {
                connections.execute(() -> serve(socket));
            } catch (RuntimeException e) { // rejected: closing
                sockets.remove(socket);
                closeQuietly(socket);
            }
        }
    }

    private void serve(Socket socket) {
        Session session = new Session();
        try (socket;
                BufferedReader in =
                        new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));
                PrintWriter out = new PrintWriter(
                        new OutputStreamWriter(socket.getOutputStream(), StandardCharsets.UTF_8), false)) {
            String line;
            while ((line = in.readLine()) != null) {
                out.print(handle(session, line));
                out.print('\n');
                out.flush();
            }
        } catch (SocketException e) {
            LOG.debug("stock server connection closed: {}", e.toString());
        } catch (IOException e) {
            if (!closed) {
                LOG.warn("stock server connection failed", e);
            }
        } finally {
            sockets.remove(socket);
        }
    }

    /**
     * Stops listening and closes every connection. Closing again does nothing.
     *
     * <p>Blocking: up to about a second for the connection threads to end. Thread-safety: safe from
     * any thread. On failure: never throws.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        closeQuietly(serverSocket);
        for (Socket socket : sockets) {
            closeQuietly(socket);
        }
        connections.shutdownNow();
        try {
            connections.awaitTermination(1, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static void closeQuietly(AutoCloseable closeable) {
        try {
            closeable.close();
        } catch (Exception e) {
            LOG.debug("close failed: {}", e.toString());
        }
    }

    /** What one connection last read; confined to its connection thread, read under the server's lock. */
    static final class Session {
        /** The stock returned by this connection's last {@code GET} since its last {@code PUT}, or -1. */
        int lastRead = -1;

        /** When {@link #lastRead} was read ({@link System#nanoTime()}). */
        long lastReadAt;
    }

    /**
     * One read-modify-write: from the connection's {@code GET} to its {@code PUT}.
     *
     * @param client who wrote
     * @param token the fencing token it carried (0 without a lock)
     * @param fromNanos when its {@code GET} was answered ({@link System#nanoTime()})
     * @param toNanos when its {@code PUT} was decided
     * @param outcome what the server did with the {@code PUT}
     */
    public record Sale(String client, long token, long fromNanos, long toNanos, Outcome outcome) {

        /** What the server did with a {@code PUT}. */
        public enum Outcome {
            /** Written, over the stock this connection had read. */
            ACCEPTED,
            /** Written over a stock another client had changed since this one read it: a lost update. */
            OVERWROTE,
            /** Refused for a stale fencing token. */
            REJECTED
        }
    }

    /**
     * Every {@code PUT} so far with the {@code GET} before it, in the order they were decided.
     *
     * <p>Blocking: while a request is being handled. Thread-safety: safe from any thread.
     *
     * @return an immutable copy
     */
    public synchronized List<Sale> sales() {
        return List.copyOf(sales);
    }

    /**
     * A write the fenced server refused.
     *
     * @param client the writer's name
     * @param token the token it wrote with
     * @param highestToken the highest token accepted before it
     * @param newValue the value it tried to write
     * @param stock the stock it would have overwritten
     */
    public record Rejection(String client, long token, long highestToken, int newValue, int stock) {}

    /**
     * The server's counters at one moment.
     *
     * @param initialStock the stock the server started with
     * @param stock the current stock
     * @param fenced whether stale tokens are rejected
     * @param sold items sold: accepted writes that lowered the stock their connection had read
     * @param highestToken the highest token accepted, 0 before any
     * @param soldByClient items sold per client
     * @param acceptedTokens the tokens of accepted writes, in the order they were accepted
     * @param rejections the writes refused for a stale token, in order
     */
    public record Snapshot(
            int initialStock,
            int stock,
            boolean fenced,
            int sold,
            long highestToken,
            Map<String, Integer> soldByClient,
            List<Long> acceptedTokens,
            List<Rejection> rejections) {

        /**
         * Items sold beyond the initial stock.
         *
         * @return {@code sold - initialStock}, or 0 if fewer were sold
         */
        public int oversold() {
            return Math.max(0, sold - initialStock);
        }

        /**
         * Whether the tokens of accepted writes strictly increased.
         *
         * @return true if every accepted token is greater than the one accepted before it
         */
        public boolean tokensStrictlyIncreasing() {
            for (int i = 1; i < acceptedTokens.size(); i++) {
                if (acceptedTokens.get(i) <= acceptedTokens.get(i - 1)) {
                    return false;
                }
            }
            return true;
        }
    }
}

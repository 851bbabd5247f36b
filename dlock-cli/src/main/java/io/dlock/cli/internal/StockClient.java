package io.dlock.cli.internal;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * One connection to a {@link StockServer}, speaking its line protocol.
 *
 * <p>Thread-safety: not thread-safe; one thread per client (requests and responses share one
 * socket).
 */
public final class StockClient implements AutoCloseable {

    /** How long a response may take before the client gives up. */
    public static final Duration DEFAULT_READ_TIMEOUT = Duration.ofSeconds(30);

    private final Socket socket;
    private final BufferedReader in;
    private final Writer out;

    private StockClient(Socket socket) throws IOException {
        this.socket = socket;
        this.in = new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));
        this.out = new OutputStreamWriter(socket.getOutputStream(), StandardCharsets.UTF_8);
    }

    /**
     * Connects to the stock server on {@code 127.0.0.1:port}.
     *
     * <p>Blocking: until connected (at most 5 s). Thread-safety: safe from any thread. On failure:
     * throws, nothing stays open.
     *
     * @param port the server's port
     * @return the connected client; close it when done
     * @throws UncheckedIOException if the server cannot be reached
     */
    public static StockClient connect(int port) {
        Socket socket = new Socket();
        try {
            socket.setTcpNoDelay(true);
            socket.setSoTimeout((int) DEFAULT_READ_TIMEOUT.toMillis());
            socket.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 5_000);
            return new StockClient(socket);
        } catch (IOException e) {
            try {
                socket.close();
            } catch (IOException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw new UncheckedIOException("stock server 127.0.0.1:" + port + " unreachable", e);
        }
    }

    /**
     * Reads the current stock ({@code GET}).
     *
     * <p>Blocking: one round trip, at most {@link #DEFAULT_READ_TIMEOUT}. Thread-safety: one thread
     * at a time. On failure: throws; the connection should then be closed.
     *
     * @return the number of items in stock
     * @throws UncheckedIOException if the connection fails
     * @throws IllegalStateException if the server answers something other than {@code STOCK <n>}
     */
    public int get() {
        String response = request("GET");
        if (!response.startsWith("STOCK ")) {
            throw new IllegalStateException("GET: unexpected response '" + response + "'");
        }
        return Integer.parseInt(response.substring("STOCK ".length()).trim());
    }

    /**
     * Writes a new stock value with a fencing token ({@code PUT}).
     *
     * <p>Blocking: one round trip, at most {@link #DEFAULT_READ_TIMEOUT}. Thread-safety: one thread
     * at a time. On failure: throws; the connection should then be closed.
     *
     * @param newValue the new stock, zero or more
     * @param client the writer's name
     * @param fencingToken the writer's lease token, 0 without a lock
     * @return whether the write was accepted and, if not, the server's highest token
     * @throws UncheckedIOException if the connection fails
     * @throws IllegalStateException if the server answers {@code ERROR} or anything unexpected
     */
    public PutResult put(int newValue, String client, long fencingToken) {
        String response = request("PUT " + newValue + " " + client + " " + fencingToken);
        if (response.equals("OK")) {
            return new PutResult(true, fencingToken);
        }
        if (response.startsWith("REJECTED ")) {
            return new PutResult(
                    false,
                    Long.parseLong(response.substring("REJECTED ".length()).trim()));
        }
        throw new IllegalStateException("PUT: unexpected response '" + response + "'");
    }

    /**
     * Sends one raw request line and returns the response line.
     *
     * <p>Blocking: one round trip, at most {@link #DEFAULT_READ_TIMEOUT}. Thread-safety: one thread
     * at a time. On failure: throws; the connection should then be closed.
     *
     * @param line the request, without a line terminator
     * @return the response, without its terminator
     * @throws UncheckedIOException if the connection fails or the server closed it
     */
    public String request(String line) {
        try {
            out.write(line);
            out.write('\n');
            out.flush();
            String response = in.readLine();
            if (response == null) {
                throw new IOException("stock server closed the connection");
            }
            return response;
        } catch (IOException e) {
            throw new UncheckedIOException("stock server request '" + line + "' failed", e);
        }
    }

    /**
     * Closes the connection. Closing again does nothing.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: never throws.
     */
    @Override
    public void close() {
        try {
            socket.close();
        } catch (IOException e) {
            // nothing to do: the connection is gone either way
        }
    }

    /**
     * The outcome of a {@code PUT}.
     *
     * @param accepted whether the server stored the value
     * @param highestToken when rejected, the highest token the server had accepted; when accepted,
     *     the token written
     */
    public record PutResult(boolean accepted, long highestToken) {}
}

package io.dlock.memcached;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.CancelledKeyException;
import java.nio.channels.ClosedSelectorException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.function.Consumer;

/**
 * One TCP connection to one memcached server, speaking the meta protocol ({@code mg}, {@code ms},
 * {@code md}, {@code ma}, {@code mn}) and {@code stats}: requests are pipelined and answered in
 * order, which is all memcached promises on one connection.
 *
 * <p>Concurrency: callers append a pipeline to the write buffer under this object's monitor and
 * try a non-blocking write at once; what the socket does not take is written by the {@link IoLoop}
 * thread, which also reads and parses every reply and completes the futures (in request order).
 * Nothing here blocks a caller: a full socket buffer leaves the bytes queued.
 *
 * <p>Failure: an I/O error, an end of stream or a reply that does not parse closes the connection
 * and fails every request in flight with {@link MemcachedIoException}; a request made while closed
 * fails at once the same way. Reconnecting is the owner's (a new instance each time, with a new
 * {@link #generation()}), so that a reply can never be matched to a request of another connection.
 *
 * <p>Invariants: {@code inflight} holds the requests written or queued for writing, oldest first;
 * each gets exactly one reply or one failure.
 */
final class MetaConnection {

    /** A request failed because the connection is closed, broke, or timed out. Transient. */
    static final class MemcachedIoException extends IOException {
        private static final long serialVersionUID = 1L;

        MemcachedIoException(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /**
     * One reply line with its value: {@code status} is {@code HD}, {@code VA}, {@code EN}, {@code
     * NS}, {@code EX}, {@code NF}, {@code MN}, {@code END} (stats), or an error ({@code ERROR},
     * {@code CLIENT_ERROR}, {@code SERVER_ERROR}); {@code flags} maps each return flag's letter to
     * its token; {@code value} is the data of {@code VA}, or the {@code STAT} lines of {@code stats}.
     */
    record Reply(String status, Map<Character, String> flags, String value) {
        boolean isError() {
            return status.equals("ERROR") || status.equals("CLIENT_ERROR") || status.equals("SERVER_ERROR");
        }

        long flagLong(char flag) {
            String v = flags.get(flag);
            if (v == null) {
                throw new IllegalStateException("reply " + this + " lacks flag " + flag);
            }
            return Long.parseLong(v);
        }

        @Override
        public String toString() {
            return status + (flags.isEmpty() ? "" : " " + flags) + (value == null ? "" : " '" + value + "'");
        }
    }

    /** A command as bytes, and whether its reply is the multi-line one of {@code stats}. */
    record Command(byte[] bytes, boolean stats) {
        static Command of(String line) {
            return new Command((line + "\r\n").getBytes(StandardCharsets.US_ASCII), false);
        }

        static Command withData(String line, String data) {
            return new Command((line + "\r\n" + data + "\r\n").getBytes(StandardCharsets.UTF_8), false);
        }

        static Command statsCommand() {
            return new Command("stats\r\n".getBytes(StandardCharsets.US_ASCII), true);
        }
    }

    private static final class Pending {
        final Command command;
        final CompletableFuture<Reply> reply = new CompletableFuture<>();
        final long sentAtNanos;

        Pending(Command command, long sentAtNanos) {
            this.command = command;
            this.sentAtNanos = sentAtNanos;
        }
    }

    final InetSocketAddress address;
    final String label;
    private final long generation;
    private final IoLoop loop;
    private final SocketChannel channel;
    private final Consumer<MetaConnection> onClose;

    @GuardedBy("this")
    private final ArrayDeque<Pending> inflight = new ArrayDeque<>();

    @GuardedBy("this")
    private ByteBuffer out = ByteBuffer.allocate(0);

    @GuardedBy("this")
    private boolean closed;

    @GuardedBy("this")
    private Throwable closeCause;

    private volatile SelectionKey key;

    // Read side: touched only by the I/O thread.
    private final ByteBuffer readBuffer = ByteBuffer.allocateDirect(16 * 1024);
    private byte[] acc = new byte[4096];
    private int accLen;
    private final List<String> statLines = new ArrayList<>();

    private MetaConnection(
            InetSocketAddress address,
            long generation,
            IoLoop loop,
            SocketChannel channel,
            Consumer<MetaConnection> onClose) {
        this.address = address;
        this.label = address.getHostString() + ":" + address.getPort();
        this.generation = generation;
        this.loop = loop;
        this.channel = channel;
        this.onClose = onClose;
    }

    /**
     * Opens a connection. Blocking: up to {@code connectTimeoutMs} for the TCP handshake (on the
     * calling thread, never the I/O thread). On failure: throws {@link IOException}, nothing open.
     */
    static MetaConnection open(
            InetSocketAddress address,
            long generation,
            IoLoop loop,
            long connectTimeoutMs,
            Consumer<MetaConnection> onClose)
            throws IOException {
        SocketChannel ch = SocketChannel.open();
        try {
            ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
            ch.setOption(StandardSocketOptions.SO_KEEPALIVE, true);
            ch.socket().connect(address, (int) Math.max(1, Math.min(Integer.MAX_VALUE, connectTimeoutMs)));
            ch.configureBlocking(false);
            MetaConnection c = new MetaConnection(address, generation, loop, ch, onClose);
            loop.register(c);
            return c;
        } catch (IOException | RuntimeException e) {
            try {
                ch.close();
            } catch (IOException ignored) {
                // already failing
            }
            throw e;
        }
    }

    long generation() {
        return generation;
    }

    synchronized boolean isOpen() {
        return !closed;
    }

    /**
     * Sends commands as one pipeline; the futures complete in order with their replies. Never
     * blocks; on a closed connection every future fails at once.
     */
    List<CompletableFuture<Reply>> send(List<Command> commands, long nowNanos) {
        List<CompletableFuture<Reply>> replies = new ArrayList<>(commands.size());
        boolean wantWrite;
        List<Pending> failed;
        synchronized (this) {
            List<Pending> added = new ArrayList<>(commands.size());
            int size = 0;
            for (Command c : commands) {
                Pending p = new Pending(c, nowNanos);
                added.add(p);
                replies.add(p.reply);
                size += c.bytes().length;
            }
            if (closed) {
                MemcachedIoException e = new MemcachedIoException("not connected to memcached at " + label, closeCause);
                added.forEach(p -> p.reply.completeExceptionally(e));
                return replies;
            }
            ByteBuffer next = ByteBuffer.allocate(out.remaining() + size);
            next.put(out);
            for (Pending p : added) {
                next.put(p.command.bytes());
                inflight.addLast(p);
            }
            next.flip();
            out = next;
            try {
                channel.write(out);
                failed = null;
            } catch (IOException e) {
                failed = closeLocked(e);
            }
            wantWrite = failed == null && out.hasRemaining();
        }
        if (failed != null) {
            fail(failed);
            return replies;
        }
        if (wantWrite) {
            loop.wantWrite(this);
        }
        return replies;
    }

    /** The send time of the oldest unanswered request, or {@code Long.MIN_VALUE} if none. */
    synchronized long oldestInflightNanos() {
        Pending p = inflight.peekFirst();
        return p == null ? Long.MIN_VALUE : p.sentAtNanos;
    }

    /** Closes the connection and fails what is in flight with {@code cause}. Idempotent. */
    void close(Throwable cause) {
        List<Pending> failed;
        synchronized (this) {
            failed = closeLocked(cause);
        }
        fail(failed);
    }

    /** Fails requests outside the monitor, so that their callbacks never run under it. */
    private void fail(List<Pending> failed) {
        if (failed == null || failed.isEmpty()) {
            return;
        }
        Throwable cause;
        synchronized (this) {
            cause = closeCause;
        }
        MemcachedIoException e = new MemcachedIoException(
                "connection to memcached at " + label + " closed" + (cause == null ? "" : ": " + cause), cause);
        for (Pending p : failed) {
            p.reply.completeExceptionally(e);
        }
    }

    /** Marks closed and returns the requests to fail; null if it was closed already. */
    @GuardedBy("this")
    private List<Pending> closeLocked(Throwable cause) {
        if (closed) {
            return null;
        }
        closed = true;
        closeCause = cause;
        try {
            channel.close();
        } catch (IOException ignored) {
            // closing anyway
        }
        List<Pending> failed = new ArrayList<>(inflight);
        inflight.clear();
        out = ByteBuffer.allocate(0);
        loop.execute(() -> onClose.accept(this));
        return failed;
    }

    // ---- I/O thread

    void registered(SelectionKey key) {
        this.key = key;
    }

    SelectionKey key() {
        return key;
    }

    SocketChannel channel() {
        return channel;
    }

    /** Writes what is queued; called by the I/O thread when the socket can take more. */
    void onWritable() {
        List<Pending> failed = null;
        synchronized (this) {
            if (closed) {
                return;
            }
            try {
                channel.write(out);
            } catch (IOException e) {
                failed = closeLocked(e);
            }
            if (failed == null && !out.hasRemaining()) {
                SelectionKey k = key;
                if (k != null && k.isValid()) {
                    k.interestOps(SelectionKey.OP_READ);
                }
            }
        }
        fail(failed);
    }

    /** Reads and dispatches replies; called by the I/O thread. */
    void onReadable() {
        try {
            while (true) {
                readBuffer.clear();
                int n = channel.read(readBuffer);
                if (n < 0) {
                    close(new IOException("memcached at " + label + " closed the connection"));
                    return;
                }
                if (n == 0) {
                    return;
                }
                readBuffer.flip();
                if (accLen + n > acc.length) {
                    byte[] bigger = new byte[Math.max(acc.length * 2, accLen + n)];
                    System.arraycopy(acc, 0, bigger, 0, accLen);
                    acc = bigger;
                }
                readBuffer.get(acc, accLen, n);
                accLen += n;
                parse();
            }
        } catch (IOException | RuntimeException e) {
            close(e);
        }
    }

    private void parse() throws IOException {
        int pos = 0;
        while (true) {
            int eol = indexOfCrlf(pos);
            if (eol < 0) {
                break;
            }
            String line = new String(acc, pos, eol - pos, StandardCharsets.UTF_8);
            int next = eol + 2;
            Pending head;
            synchronized (this) {
                head = inflight.peekFirst();
            }
            if (head == null) {
                throw new IOException("memcached at " + label + " sent a reply nobody asked for: '" + line + "'");
            }
            Reply reply;
            if (head.command.stats()) {
                if (line.startsWith("STAT ")) {
                    statLines.add(line.substring(5));
                    pos = next;
                    continue;
                }
                if (line.equals("END")) {
                    reply = new Reply("END", Map.of(), String.join("\n", statLines));
                    statLines.clear();
                } else {
                    reply = parseLine(line, null);
                }
            } else if (line.startsWith("VA ")) {
                String[] tokens = line.split(" ");
                int len = Integer.parseInt(tokens[1]);
                if (accLen < next + len + 2) {
                    break; // the value has not fully arrived
                }
                String value = new String(acc, next, len, StandardCharsets.UTF_8);
                next = next + len + 2;
                reply = parseLine(line, value);
            } else {
                reply = parseLine(line, null);
            }
            pos = next;
            synchronized (this) {
                inflight.pollFirst();
            }
            head.reply.complete(reply);
        }
        if (pos > 0) {
            System.arraycopy(acc, pos, acc, 0, accLen - pos);
            accLen -= pos;
        }
    }

    private static Reply parseLine(String line, String value) {
        if (line.startsWith("CLIENT_ERROR") || line.startsWith("SERVER_ERROR") || line.equals("ERROR")) {
            int sp = line.indexOf(' ');
            return new Reply(sp < 0 ? line : line.substring(0, sp), Map.of(), sp < 0 ? "" : line.substring(sp + 1));
        }
        String[] tokens = line.split(" ");
        Map<Character, String> flags = new HashMap<>();
        for (int i = tokens[0].equals("VA") ? 2 : 1; i < tokens.length; i++) {
            if (!tokens[i].isEmpty()) {
                flags.put(tokens[i].charAt(0), tokens[i].substring(1));
            }
        }
        return new Reply(tokens[0], flags, value);
    }

    private int indexOfCrlf(int from) {
        for (int i = from; i + 1 < accLen; i++) {
            if (acc[i] == '\r' && acc[i + 1] == '\n') {
                return i;
            }
        }
        return -1;
    }

    @Override
    public String toString() {
        return "MetaConnection[" + label + ", generation " + generation + "]";
    }

    /**
     * The one I/O thread of a backend: a selector over every server connection, plus a task queue
     * for registrations and close callbacks, so that they run on this thread in order.
     *
     * <p>Concurrency: only this thread touches the selector's key set; other threads hand work in
     * through {@link #execute} and wake the selector.
     */
    static final class IoLoop implements AutoCloseable {
        private final Selector selector;
        private final Thread thread;
        private final ConcurrentLinkedQueue<Runnable> tasks = new ConcurrentLinkedQueue<>();
        private volatile boolean running = true;

        IoLoop(String name) throws IOException {
            this.selector = Selector.open();
            this.thread = new Thread(this::run, name);
            this.thread.setDaemon(true);
            this.thread.start();
        }

        void execute(Runnable task) {
            tasks.add(task);
            selector.wakeup();
        }

        void register(MetaConnection c) {
            execute(() -> {
                try {
                    SelectionKey k = c.channel().register(selector, SelectionKey.OP_READ, c);
                    c.registered(k);
                    c.onWritable(); // anything queued before the registration
                    if (c.isOpen() && k.isValid()) {
                        synchronized (c) {
                            if (c.out.hasRemaining()) {
                                k.interestOps(SelectionKey.OP_READ | SelectionKey.OP_WRITE);
                            }
                        }
                    }
                } catch (IOException | RuntimeException e) {
                    c.close(e);
                }
            });
        }

        void wantWrite(MetaConnection c) {
            execute(() -> {
                SelectionKey k = c.key();
                if (k != null && k.isValid()) {
                    k.interestOps(SelectionKey.OP_READ | SelectionKey.OP_WRITE);
                }
            });
        }

        private void run() {
            while (running) {
                try {
                    selector.select(1000);
                    for (Runnable r; (r = tasks.poll()) != null; ) {
                        try {
                            r.run();
                        } catch (RuntimeException e) {
                            org.slf4j.LoggerFactory.getLogger(IoLoop.class).warn("I/O task failed", e);
                        }
                    }
                    for (SelectionKey k : selector.selectedKeys()) {
                        MetaConnection c = (MetaConnection) k.attachment();
                        try {
                            if (k.isValid() && k.isWritable()) {
                                c.onWritable();
                            }
                            if (k.isValid() && k.isReadable()) {
                                c.onReadable();
                            }
                        } catch (CancelledKeyException e) {
                            // closed meanwhile
                        }
                    }
                    selector.selectedKeys().clear();
                } catch (IOException | ClosedSelectorException e) {
                    if (running) {
                        org.slf4j.LoggerFactory.getLogger(IoLoop.class).warn("selector failed", e);
                    }
                }
            }
        }

        @Override
        public void close() {
            running = false;
            selector.wakeup();
            try {
                thread.join(2000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            try {
                selector.close();
            } catch (IOException ignored) {
                // closing
            }
        }
    }
}

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
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * One TCP connection to one memcached server, speaking the meta protocol ({@code mg}, {@code ms},
 * {@code md}, {@code ma}, {@code mn}) and {@code stats}: requests are pipelined and answered in
 * order, which is all memcached promises on one connection.
 *
 * <p>Concurrency: callers append a pipeline to the write buffer under this object's monitor and
 * try a non-blocking write at once; what the socket does not take is written by the {@link IoLoop}
 * thread. Replies are read and parsed by whoever holds the {@code reader} lock, and the futures
 * complete (in request order) on that thread: usually the I/O thread, but a caller that is going
 * to wait for its reply anyway may read it itself ({@link #send(List, long, boolean)} with {@code
 * assist}), for at most {@value #ASSIST_MILLIS} ms, then leaves the rest to the I/O thread. That
 * saves a thread hand-off per round trip (the I/O thread waking, then waking the caller), which on
 * an uncontended lock is most of what dlock costs above the bare {@code add}/{@code delete}.
 *
 * <p>The I/O thread is <em>armed</em> (its selector watches the socket for replies) whenever a
 * request is in flight that no caller is reading for itself; it disarms itself when it finds
 * nothing in flight, so that an assisting caller's reply does not wake it too. The owner re-arms
 * idle connections periodically ({@link #arm()}), so that a server closing an idle connection is
 * noticed.
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

        MemcachedIoException(String message, @Nullable Throwable cause) {
            super(message, cause);
        }
    }

    /**
     * One reply line with its value: {@code status} is {@code HD}, {@code VA}, {@code EN}, {@code
     * NS}, {@code EX}, {@code NF}, {@code MN}, {@code END} (stats), or an error ({@code ERROR},
     * {@code CLIENT_ERROR}, {@code SERVER_ERROR}); {@code flags} holds the return flags as sent (for
     * example {@code "c42 t17"}); {@code value} is the data of {@code VA}, an error's message, or the
     * {@code STAT} lines of {@code stats}.
     */
    record Reply(String status, String flags, @Nullable String value) {
        boolean isError() {
            return status.equals("ERROR") || status.equals("CLIENT_ERROR") || status.equals("SERVER_ERROR");
        }

        long flagLong(char flag) {
            // Flags are space-separated tokens, each a letter and its value: scan rather than split.
            int n = flags.length();
            for (int i = 0; i < n; ) {
                int end = flags.indexOf(' ', i);
                if (end < 0) {
                    end = n;
                }
                if (end > i && flags.charAt(i) == flag) {
                    return Long.parseLong(flags, i + 1, end, 10);
                }
                i = end + 1;
            }
            throw new IllegalStateException("reply " + this + " lacks flag " + flag);
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

        /**
         * {@code ms <key> <datalen> <flags>} with {@code data}: the length is of the data's UTF-8
         * bytes, which is what the server reads (a host name outside ASCII is longer in bytes than
         * in chars, and a char count would leave the rest of the block to be read as a command).
         */
        static Command set(String key, String data, String flags) {
            byte[] block = data.getBytes(StandardCharsets.UTF_8);
            byte[] head = ("ms " + key + " " + block.length + " " + flags + "\r\n").getBytes(StandardCharsets.UTF_8);
            byte[] bytes = java.util.Arrays.copyOf(head, head.length + block.length + 2);
            System.arraycopy(block, 0, bytes, head.length, block.length);
            bytes[bytes.length - 2] = '\r';
            bytes[bytes.length - 1] = '\n';
            return new Command(bytes, false);
        }

        static Command statsCommand() {
            return new Command("stats\r\n".getBytes(StandardCharsets.US_ASCII), true);
        }
    }

    /** The replies of one pipeline, completed together when its last reply arrives. */
    private static final class Pipeline {
        final Reply[] replies;
        final CompletableFuture<List<Reply>> done = new CompletableFuture<>();

        Pipeline(int size) {
            this.replies = new Reply[size];
        }
    }

    /** One command of a pipeline, waiting for its reply. */
    private static final class Pending {
        final Command command;
        final Pipeline pipeline;
        final int index;
        final long sentAtNanos;

        Pending(Command command, Pipeline pipeline, int index, long sentAtNanos) {
            this.command = command;
            this.pipeline = pipeline;
            this.index = index;
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
    private @Nullable Throwable closeCause;

    /** Whether the I/O thread's selector should watch for replies (see the class comment). */
    @GuardedBy("this")
    private boolean armed = true;

    /** Whether a caller holds {@code reader} to read its own reply. */
    @GuardedBy("this")
    private boolean callerReading;

    /** Held while reading and parsing replies: by the I/O thread or by an assisting caller. */
    private final ReentrantLock reader = new ReentrantLock();

    private volatile @Nullable SelectionKey key;

    // Read side: guarded by `reader`.
    private @Nullable Selector ownSelector; // an assisting caller's own wait for the socket, opened on first use
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

    /** How long an assisting caller waits for its own reply before leaving it to the I/O thread. */
    static final long ASSIST_MILLIS = 1;

    /** {@link #send(List, long, boolean)} without assisting: the I/O thread reads the replies. */
    CompletableFuture<List<Reply>> send(List<Command> commands, long nowNanos) {
        return send(commands, nowNanos, false);
    }

    /**
     * Sends commands as one pipeline, in one write when the socket takes it; the future completes
     * with every reply, in order, once the last one arrived. On a closed connection the future fails
     * at once.
     *
     * <p>Blocking: never, unless {@code assist}: then the calling thread reads replies itself for up
     * to {@value #ASSIST_MILLIS} ms (their futures complete on it, others' too if theirs come
     * first), and returns once its own pipeline is answered or that time is up, the I/O thread taking
     * over from there. For callers about to wait for the reply anyway; never from the I/O thread.
     */
    CompletableFuture<List<Reply>> send(List<Command> commands, long nowNanos, boolean assist) {
        int count = commands.size();
        Pipeline pipeline = new Pipeline(count);
        byte[] bytes;
        if (count == 1) {
            bytes = commands.get(0).bytes();
        } else {
            int size = 0;
            for (Command c : commands) {
                size += c.bytes().length;
            }
            bytes = new byte[size];
            int at = 0;
            for (Command c : commands) {
                System.arraycopy(c.bytes(), 0, bytes, at, c.bytes().length);
                at += c.bytes().length;
            }
        }
        boolean wantWrite;
        @Nullable List<Pending> failed = null;
        boolean wasClosed;
        @Nullable Throwable refused = null;
        synchronized (this) {
            wasClosed = closed;
            if (wasClosed) {
                refused = closeCause;
            } else {
                for (int i = 0; i < count; i++) {
                    inflight.addLast(new Pending(commands.get(i), pipeline, i, nowNanos));
                }
                if (out.hasRemaining()) {
                    // Bytes are still queued for the I/O thread: ours go behind them.
                    ByteBuffer next = ByteBuffer.allocate(out.remaining() + bytes.length);
                    next.put(out).put(bytes).flip();
                    out = next;
                } else {
                    out = ByteBuffer.wrap(bytes);
                }
                try {
                    channel.write(out);
                } catch (IOException e) {
                    failed = closeLocked(e);
                }
            }
            wantWrite = !wasClosed && failed == null && out.hasRemaining();
        }
        if (wasClosed) {
            pipeline.done.completeExceptionally(
                    new MemcachedIoException("not connected to memcached at " + label, refused));
            return pipeline.done;
        }
        if (failed != null) {
            fail(failed);
            return pipeline.done;
        }
        if (wantWrite) {
            loop.wantWrite(this);
        }
        if (assist
                && !wantWrite
                && !reader.isHeldByCurrentThread()
                && !loop.isIoThread()
                && !Thread.currentThread().isInterrupted()) { // an interrupted select returns at once
            assist(pipeline.done);
        } else {
            arm();
        }
        return pipeline.done;
    }

    /** Makes sure the I/O thread watches for replies; wakes its selector if that changed anything. */
    void arm() {
        synchronized (this) {
            if (armed || closed) {
                return;
            }
            armed = true;
            updateInterestLocked();
        }
        loop.wakeup();
    }

    /** Sets the selector's interest from {@code armed} and the write buffer. */
    @GuardedBy("this")
    private void updateInterestLocked() {
        SelectionKey k = key;
        if (k != null && k.isValid()) {
            k.interestOps((armed ? SelectionKey.OP_READ : 0) | (out.hasRemaining() ? SelectionKey.OP_WRITE : 0));
        }
    }

    /** Reads on the calling thread until {@code done} or {@link #ASSIST_MILLIS}; see {@link #send}. */
    private void assist(CompletableFuture<List<Reply>> done) {
        if (!reader.tryLock()) {
            arm(); // someone else is reading: the I/O thread, or a caller who arms it when it stops
            return;
        }
        synchronized (this) {
            callerReading = true;
        }
        try {
            if (ownSelector == null) {
                ownSelector = Selector.open();
                channel.register(ownSelector, SelectionKey.OP_READ);
            }
            long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ASSIST_MILLIS);
            while (!done.isDone() && isOpen() && !Thread.currentThread().isInterrupted()) {
                long left = deadline - System.nanoTime();
                Selector sel = ownSelector; // null once a close (on this thread, from a read) released it
                if (left <= 0 || sel == null) {
                    break;
                }
                int ready = sel.select(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
                sel.selectedKeys().clear();
                if (ready > 0) {
                    readAvailable();
                }
            }
        } catch (IOException | RuntimeException e) {
            close(e);
        } finally {
            if (!isOpen()) {
                closeOwnSelector();
            }
            boolean wake = false;
            synchronized (this) {
                callerReading = false;
                // Ours timed out, or others' requests came in meanwhile: the I/O thread reads them.
                if (!inflight.isEmpty() && !armed && !closed) {
                    armed = true;
                    updateInterestLocked();
                    wake = true;
                }
            }
            reader.unlock();
            if (wake) {
                loop.wakeup();
            }
        }
    }

    /** Under {@code reader}. */
    private void closeOwnSelector() {
        Selector sel = ownSelector;
        ownSelector = null;
        if (sel != null) {
            try {
                sel.close();
            } catch (IOException ignored) {
                // closing anyway
            }
        }
    }

    /** The send time of the oldest unanswered request, or {@code Long.MIN_VALUE} if none. */
    synchronized long oldestInflightNanos() {
        Pending p = inflight.peekFirst();
        return p == null ? Long.MIN_VALUE : p.sentAtNanos;
    }

    /** Closes the connection and fails what is in flight with {@code cause}. Idempotent. */
    void close(@Nullable Throwable cause) {
        List<Pending> failed;
        synchronized (this) {
            failed = closeLocked(cause);
        }
        fail(failed);
        if (reader.tryLock()) { // else the reader closes it when it sees the connection closed
            try {
                closeOwnSelector();
            } finally {
                reader.unlock();
            }
        }
    }

    /** Fails requests outside the monitor, so that their callbacks never run under it. */
    private void fail(@Nullable List<Pending> failed) {
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
            p.pipeline.done.completeExceptionally(e);
        }
    }

    /** Marks closed and returns the requests to fail; null if it was closed already. */
    @GuardedBy("this")
    private @Nullable List<Pending> closeLocked(@Nullable Throwable cause) {
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

    @Nullable
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
                updateInterestLocked();
            }
        }
        fail(failed);
    }

    /**
     * Reads and dispatches replies; called by the I/O thread. Waits for an assisting caller to let
     * go of the reader lock (at most about {@link #ASSIST_MILLIS}); disarms when nothing is in flight.
     */
    void onReadable() {
        synchronized (this) {
            if (callerReading) {
                // The caller reads; it arms this thread again when it stops with requests in flight.
                armed = false;
                updateInterestLocked(); // this is the selector's thread: effective at its next select
                return;
            }
        }
        reader.lock();
        try {
            readAvailable();
        } finally {
            reader.unlock();
        }
        synchronized (this) {
            if (inflight.isEmpty() && armed && !closed) {
                armed = false;
                updateInterestLocked(); // this is the selector's thread: effective at its next select
            }
        }
    }

    /** Reads what the socket has and dispatches the replies; under {@code reader}. */
    private void readAvailable() {
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
                if (n < readBuffer.capacity()) {
                    // The socket had less than a buffer's worth: the selector reports what comes next,
                    // and a read that would only say "nothing more" is a system call saved per reply.
                    return;
                }
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
            int next = eol + 2;
            Pending head;
            synchronized (this) {
                head = inflight.peekFirst();
            }
            if (head == null) {
                throw new IOException("memcached at " + label + " sent a reply nobody asked for: '"
                        + new String(acc, pos, eol - pos, StandardCharsets.UTF_8) + "'");
            }
            Reply reply;
            if (head.command.stats()) {
                String line = new String(acc, pos, eol - pos, StandardCharsets.UTF_8);
                if (line.startsWith("STAT ")) {
                    statLines.add(line.substring(5));
                    pos = next;
                    continue;
                }
                if (line.equals("END")) {
                    reply = new Reply("END", "", String.join("\n", statLines));
                    statLines.clear();
                } else {
                    reply = parseLine(acc, pos, eol, null);
                }
            } else if (eol - pos > 3 && acc[pos] == 'V' && acc[pos + 1] == 'A' && acc[pos + 2] == ' ') {
                int sp = pos + 3;
                int len = 0;
                while (sp < eol && acc[sp] != ' ') {
                    int d = acc[sp++] - '0';
                    if (d < 0 || d > 9) {
                        throw new IOException("memcached at " + label + " sent a malformed VA line");
                    }
                    len = len * 10 + d;
                }
                if (accLen < next + len + 2) {
                    break; // the value has not fully arrived
                }
                String value = new String(acc, next, len, StandardCharsets.UTF_8);
                reply = new Reply("VA", sp < eol ? ascii(acc, sp + 1, eol) : "", value);
                next = next + len + 2;
            } else {
                reply = parseLine(acc, pos, eol, null);
            }
            pos = next;
            synchronized (this) {
                inflight.pollFirst();
            }
            Pipeline p = head.pipeline;
            p.replies[head.index] = reply;
            if (head.index == p.replies.length - 1) {
                p.done.complete(Arrays.asList(p.replies));
            }
        }
        if (pos > 0) {
            System.arraycopy(acc, pos, acc, 0, accLen - pos);
            accLen -= pos;
        }
    }

    /** A reply line without a value: its status, then its flags (or an error's message). */
    private static Reply parseLine(byte[] b, int from, int to, @Nullable String value) {
        int sp = from;
        while (sp < to && b[sp] != ' ') {
            sp++;
        }
        String status = ascii(b, from, sp);
        String rest = sp < to ? new String(b, sp + 1, to - sp - 1, StandardCharsets.UTF_8) : "";
        if (status.equals("CLIENT_ERROR") || status.equals("SERVER_ERROR") || status.equals("ERROR")) {
            return new Reply(status, "", rest);
        }
        return new Reply(status, rest, value);
    }

    /** Status words and flags are ASCII; Latin-1 decoding is a plain copy. */
    private static String ascii(byte[] b, int from, int to) {
        return new String(b, from, to - from, StandardCharsets.ISO_8859_1);
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
                    synchronized (c) {
                        c.updateInterestLocked();
                    }
                } catch (IOException | RuntimeException e) {
                    c.close(e);
                }
            });
        }

        void wantWrite(MetaConnection c) {
            execute(() -> {
                synchronized (c) {
                    c.updateInterestLocked();
                }
            });
        }

        void wakeup() {
            selector.wakeup();
        }

        boolean isIoThread() {
            return Thread.currentThread() == thread;
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

package io.dlock.testkit;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * Hands out free TCP ports on the loopback interface, never the same one to two JVMs of one machine.
 *
 * <p>Test JVMs run side by side (several failsafe forks, modules built in parallel, child JVMs), and
 * a port that one JVM found free may be taken by a server another JVM starts before the first binds
 * it. So each JVM claims a block of {@value #BLOCK} ports below the kernel's ephemeral range by
 * holding an exclusive lock on a file in {@code java.io.tmpdir}, and hands out ports from its own
 * blocks only. The kernel releases the lock when the JVM exits, however it exits. Ports below the
 * ephemeral range are also never the local port of an outgoing connection, so a server restarted on
 * its old port finds it free. Where no block can be claimed (every one held, the directory not
 * writable), the JVM falls back to ports the kernel picks.
 *
 * <p>Thread-safety: safe from any thread.
 */
public final class FreePorts {

    /** Ports in one claimed block. */
    static final int BLOCK = 200;

    /** The lowest port of the first block. */
    private static final int FIRST = 20_000;

    /** Where the ports go when the kernel's ephemeral range cannot be read (Linux's default start). */
    private static final int DEFAULT_EPHEMERAL_START = 32_768;

    /** How many recently issued ports are never handed out twice in a row (the kernel fallback). */
    private static final int REMEMBERED = 256;

    private static final Object LOCK = new Object();

    // The locks are never released (held here so that no cleaner closes their channels): the kernel
    // drops them when the JVM exits.
    @GuardedBy("LOCK")
    private static final List<Claim> CLAIMED = new ArrayList<>();

    /** A block this JVM holds: the lock on its file and its first port. */
    private record Claim(FileLock lock, int start) {}

    @GuardedBy("LOCK")
    private static int reused;

    @GuardedBy("LOCK")
    private static int next;

    @GuardedBy("LOCK")
    private static int blockEnd;

    @GuardedBy("LOCK")
    private static boolean blocksUnavailable;

    // The kernel may hand the same ephemeral port to two callers before either binds it.
    @GuardedBy("LOCK")
    private static final Deque<Integer> RECENT = new ArrayDeque<>();

    private FreePorts() {}

    /**
     * Returns a TCP port that was free on 127.0.0.1 a moment ago and that no other JVM on this
     * machine is handed.
     *
     * <p>Blocking: a bind per candidate port, and a file lock when a new block is claimed.
     * Thread-safety: safe from any thread; no port is handed out twice by one JVM until its blocks
     * wrap around. On failure: {@link UncheckedIOException} if no socket can be bound; a process
     * that does not use this class may still grab the port before the caller binds it.
     *
     * @return a port number in 1..65535
     */
    public static int loopback() {
        synchronized (LOCK) {
            if (!blocksUnavailable) {
                for (int tries = 0; tries < 4 * BLOCK; tries++) {
                    if (next >= blockEnd && !claimBlock()) {
                        break;
                    }
                    int port = next++;
                    if (bindable(port)) {
                        return port;
                    }
                }
            }
        }
        return kernelPort();
    }

    /** Claims the next free block, or wraps around to this JVM's first one when none is left. */
    @GuardedBy("LOCK")
    private static boolean claimBlock() {
        int end = ephemeralStart();
        Path dir = Path.of(System.getProperty("java.io.tmpdir"), "dlock-ports");
        try {
            Files.createDirectories(dir);
        } catch (IOException e) {
            blocksUnavailable = true;
            return false;
        }
        for (int start = FIRST; start + BLOCK <= end; start += BLOCK) {
            int first = start;
            if (CLAIMED.stream().anyMatch(c -> c.start() == first)) {
                // Opening and closing the file again would drop this JVM's own lock (POSIX locks are
                // per process and go with any of its descriptors' close).
                continue;
            }
            FileLock lock = tryLock(dir.resolve("block-" + start + ".lock"));
            if (lock != null) {
                CLAIMED.add(new Claim(lock, start));
                next = start;
                blockEnd = start + BLOCK;
                return true;
            }
        }
        if (CLAIMED.isEmpty()) {
            blocksUnavailable = true;
            return false;
        }
        // Every block is taken and this JVM has used all of its own: reuse them in turn.
        int start = CLAIMED.get(reused++ % CLAIMED.size()).start();
        next = start;
        blockEnd = start + BLOCK;
        return true;
    }

    private static @Nullable FileLock tryLock(Path file) {
        FileChannel channel = null;
        try {
            channel = FileChannel.open(
                    file, StandardOpenOption.CREATE, StandardOpenOption.WRITE, StandardOpenOption.READ);
            FileLock lock = channel.tryLock();
            if (lock == null) {
                channel.close();
            }
            return lock;
        } catch (IOException | OverlappingFileLockException e) {
            // Not writable by this user: not ours to use.
            if (channel != null) {
                try {
                    channel.close();
                } catch (IOException ignored) {
                    // nothing to undo
                }
            }
            return null;
        }
    }

    /** The first port of the kernel's ephemeral range, which holds no block. */
    static int ephemeralStart() {
        try {
            String range = Files.readString(
                            Path.of("/proc/sys/net/ipv4/ip_local_port_range"), StandardCharsets.US_ASCII)
                    .trim();
            int start = Integer.parseInt(range.split("\\s+")[0]);
            return start > FIRST + BLOCK ? start : DEFAULT_EPHEMERAL_START;
        } catch (IOException | RuntimeException e) {
            return DEFAULT_EPHEMERAL_START;
        }
    }

    private static boolean bindable(int port) {
        try (ServerSocket socket = new ServerSocket()) {
            socket.setReuseAddress(true);
            socket.bind(new InetSocketAddress(loopbackAddress(), port), 1);
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    private static int kernelPort() {
        for (int attempt = 0; ; attempt++) {
            int port = bindAndRelease();
            synchronized (LOCK) {
                if (!RECENT.contains(port) || attempt >= 16) {
                    RECENT.addLast(port);
                    if (RECENT.size() > REMEMBERED) {
                        RECENT.removeFirst();
                    }
                    return port;
                }
            }
        }
    }

    static InetAddress loopbackAddress() {
        try {
            return InetAddress.getByAddress("127.0.0.1", new byte[] {127, 0, 0, 1});
        } catch (IOException e) {
            throw new UncheckedIOException(e); // cannot happen for a 4-byte address
        }
    }

    private static int bindAndRelease() {
        try (ServerSocket socket = new ServerSocket()) {
            socket.setReuseAddress(true);
            socket.bind(new InetSocketAddress(loopbackAddress(), 0), 1);
            return socket.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot bind a free port on 127.0.0.1", e);
        }
    }
}

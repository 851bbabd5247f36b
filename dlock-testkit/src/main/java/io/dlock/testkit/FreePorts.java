package io.dlock.testkit;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.util.ArrayDeque;
import java.util.Deque;

/**
 * Hands out free TCP ports on the loopback interface.
 *
 * <p>Thread-safety: safe from any thread.
 */
public final class FreePorts {

    /** How many recently issued ports are never handed out twice in a row. */
    private static final int REMEMBERED = 256;

    private static final Object LOCK = new Object();

    // The kernel may hand the same ephemeral port to two callers before either binds it.
    @GuardedBy("LOCK")
    private static final Deque<Integer> RECENT = new ArrayDeque<>();

    private FreePorts() {}

    /**
     * Returns a TCP port that was free on 127.0.0.1 a moment ago (bind port 0, read, close).
     *
     * <p>Blocking: never (one bind). Thread-safety: safe from any thread; a port among the last
     * 256 issued in this JVM is avoided, since the kernel may offer it twice before anyone binds
     * it. On failure: {@link UncheckedIOException} if no socket can be bound; another process may
     * still grab the port before the caller binds it.
     *
     * @return a port number in 1..65535
     */
    public static int loopback() {
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

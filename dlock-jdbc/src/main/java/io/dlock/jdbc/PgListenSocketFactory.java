package io.dlock.jdbc;

import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import javax.net.SocketFactory;

/**
 * Internal to dlock-jdbc (public only because the PostgreSQL driver instantiates it by name, as its
 * {@code socketFactory} connection property): the sockets of dlock's own LISTEN connection.
 *
 * <p>Why: after each notification, the driver's {@code getNotifications} asks whether more bytes
 * are pending by reading with a 1 ms socket timeout ({@code PGStream.hasMessagePending}, 42.7.x), so
 * every NOTIFY reached dlock at least 1 ms late. Measured in a W3 benchmark worker: the
 * notification arrived 2.0 ms (p50) after the releasing statement was sent, 1.2 ms after that
 * statement's reply (BENCHMARKS.md, SQL). On these sockets a read under a 1 ms timeout returns at
 * once with {@link SocketTimeoutException} when no byte is in the socket's buffer, which is what the
 * driver's probe means to ask; every other read is the plain socket's.
 *
 * <p>Thread-safety: as {@link Socket}; the factory is stateless but for a counter for tests.
 */
public final class PgListenSocketFactory extends SocketFactory {
    /** Probes answered at once because nothing was pending (for tests). */
    static final AtomicLong QUICK_PEEKS = new AtomicLong();

    /** Called by the driver (by reflection); holds nothing. */
    public PgListenSocketFactory() {}

    @Override
    public Socket createSocket() {
        return new QuickPeekSocket();
    }

    @Override
    public Socket createSocket(String host, int port) throws IOException {
        Socket s = createSocket();
        s.connect(new InetSocketAddress(host, port));
        return s;
    }

    @Override
    public Socket createSocket(String host, int port, InetAddress localHost, int localPort) throws IOException {
        Socket s = createSocket();
        s.bind(new InetSocketAddress(localHost, localPort));
        s.connect(new InetSocketAddress(host, port));
        return s;
    }

    @Override
    public Socket createSocket(InetAddress host, int port) throws IOException {
        Socket s = createSocket();
        s.connect(new InetSocketAddress(host, port));
        return s;
    }

    @Override
    public Socket createSocket(InetAddress address, int port, InetAddress localAddress, int localPort)
            throws IOException {
        Socket s = createSocket();
        s.bind(new InetSocketAddress(localAddress, localPort));
        s.connect(new InetSocketAddress(address, port));
        return s;
    }

    /** A socket whose reads under a 1 ms timeout do not wait when nothing is pending. */
    static final class QuickPeekSocket extends Socket {
        private volatile boolean peek;

        @Override
        public synchronized void setSoTimeout(int timeout) throws SocketException {
            super.setSoTimeout(timeout);
            peek = timeout == 1;
        }

        @Override
        public InputStream getInputStream() throws IOException {
            InputStream raw = super.getInputStream();
            return new FilterInputStream(raw) {
                @Override
                public int read() throws IOException {
                    probe();
                    return super.read();
                }

                @Override
                public int read(byte[] b, int off, int len) throws IOException {
                    if (len > 0) {
                        probe();
                    }
                    return super.read(b, off, len);
                }

                private void probe() throws IOException {
                    if (peek && in.available() <= 0) {
                        QUICK_PEEKS.incrementAndGet();
                        throw new SocketTimeoutException("nothing pending");
                    }
                }
            };
        }
    }
}

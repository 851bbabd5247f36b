package io.dlock.benchmarks;

import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The least any memcached lock does, and what seed 001 and most published snippets do: {@code add
 * key 0 30 token} to acquire (one round trip), {@code delete key} to release (one round trip), no
 * owner check, no renewal, no token. While the key is held elsewhere it polls with the back-off
 * dlock's memcached waiters use (5 ms doubling to 200 ms, jittered), so W2 and W3 compare dlock with
 * the same polling done bare.
 *
 * <p>Thread-safety: safe from any thread; each thread gets its own connection (text protocol, one
 * request at a time), so threads never wait for each other's replies.
 */
final class MemcachedFloorAdapter implements BenchClient {
    private static final String PREFIX = "floor-bench:";
    private static final long MIN_POLL_MS = 5;
    private static final long MAX_POLL_MS = 200;

    private final InetSocketAddress address;
    private final String clientId = UUID.randomUUID().toString();
    private final AtomicLong tokens = new AtomicLong();
    private final List<Conn> all = new CopyOnWriteArrayList<>();
    private final ThreadLocal<Conn> conns = ThreadLocal.withInitial(this::open);

    MemcachedFloorAdapter(String address) {
        int colon = address.lastIndexOf(':');
        this.address =
                new InetSocketAddress(address.substring(0, colon), Integer.parseInt(address.substring(colon + 1)));
        conns.get().request("version\r\n"); // fail now if the server is not there
    }

    private record Conn(Socket socket, OutputStream out, InputStream in) {
        String request(String command) {
            try {
                out.write(command.getBytes(StandardCharsets.US_ASCII));
                out.flush();
                StringBuilder line = new StringBuilder();
                int prev = -1;
                while (true) {
                    int c = in.read();
                    if (c < 0) {
                        throw new IOException("memcached closed the connection");
                    }
                    if (prev == '\r' && c == '\n') {
                        return line.substring(0, line.length() - 1);
                    }
                    line.append((char) c);
                    prev = c;
                }
            } catch (IOException e) {
                throw new UncheckedIOException("memcached floor: " + command.trim(), e);
            }
        }
    }

    private Conn open() {
        try {
            Socket s = new Socket();
            s.setTcpNoDelay(true);
            s.connect(address, 5000);
            Conn c = new Conn(s, s.getOutputStream(), new BufferedInputStream(s.getInputStream()));
            all.add(c);
            return c;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot connect to memcached at " + address, e);
        }
    }

    @Override
    public BenchLock lock(String name) {
        String key = PREFIX + name;
        return () -> {
            Conn c = conns.get();
            String token = clientId + ":" + tokens.incrementAndGet();
            String add = "add " + key + " 0 30 " + token.length() + "\r\n" + token + "\r\n";
            for (int polls = 0; ; polls++) {
                String reply = c.request(add);
                if (reply.equals("STORED")) {
                    break;
                }
                if (!reply.equals("NOT_STORED")) {
                    throw new IllegalStateException("memcached floor: add " + key + " answered " + reply);
                }
                long d = Math.min(MAX_POLL_MS, MIN_POLL_MS << Math.min(16, polls));
                Thread.sleep(d / 2 + ThreadLocalRandom.current().nextLong(d / 2 + 1));
            }
            String delete = "delete " + key + "\r\n";
            return () -> conns.get().request(delete);
        };
    }

    @Override
    public void close() {
        for (Conn c : all) {
            try {
                c.socket().close();
            } catch (IOException ignored) {
                // closing
            }
        }
    }
}

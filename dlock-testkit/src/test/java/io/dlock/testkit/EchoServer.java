package io.dlock.testkit;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/** A plain TCP echo server on 127.0.0.1 for the proxy's tests; counts the bytes it received. */
final class EchoServer implements AutoCloseable {
    private final ServerSocket listener;
    private final Set<Socket> sockets = ConcurrentHashMap.newKeySet();
    private final AtomicLong received = new AtomicLong();
    private final AtomicLong connections = new AtomicLong();

    EchoServer() throws IOException {
        listener = new ServerSocket();
        listener.bind(new InetSocketAddress(FreePorts.loopbackAddress(), 0));
        Thread acceptor = new Thread(this::accept, "echo-accept");
        acceptor.setDaemon(true);
        acceptor.start();
    }

    int port() {
        return listener.getLocalPort();
    }

    long received() {
        return received.get();
    }

    long connections() {
        return connections.get();
    }

    private void accept() {
        while (true) {
            Socket s;
            try {
                s = listener.accept();
            } catch (IOException e) {
                return;
            }
            connections.incrementAndGet();
            sockets.add(s);
            Thread t = new Thread(() -> echo(s), "echo-" + s.getPort());
            t.setDaemon(true);
            t.start();
        }
    }

    private void echo(Socket s) {
        byte[] buffer = new byte[4096];
        try (s;
                InputStream in = s.getInputStream();
                OutputStream out = s.getOutputStream()) {
            int n;
            while ((n = in.read(buffer)) >= 0) {
                received.addAndGet(n);
                out.write(buffer, 0, n);
                out.flush();
            }
        } catch (IOException e) {
            // reset or closed
        } finally {
            sockets.remove(s);
        }
    }

    @Override
    public void close() throws IOException {
        listener.close();
        for (Socket s : sockets) {
            s.close();
        }
    }
}

package io.dlock.benchmarks;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;

/** A readiness probe: {@code PING} over a plain socket, expecting {@code +PONG}. Stateless. */
final class RedisPing {
    private RedisPing() {}

    static boolean ok(int port) {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress("127.0.0.1", port), 500);
            socket.setSoTimeout(500);
            socket.getOutputStream().write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
            InputStream in = socket.getInputStream();
            byte[] buf = new byte[7];
            int n = in.readNBytes(buf, 0, 7);
            return new String(buf, 0, n, StandardCharsets.US_ASCII).startsWith("+PONG");
        } catch (IOException e) {
            return false;
        }
    }
}

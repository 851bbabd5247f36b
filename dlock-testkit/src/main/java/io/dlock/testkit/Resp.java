package io.dlock.testkit;

import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.SSLSocketFactory;
import org.jspecify.annotations.Nullable;

/** A minimal RESP2 client: enough for readiness probes and test inspection. */
final class Resp {
    private Resp() {}

    static boolean isUp(int port, @Nullable SSLSocketFactory tls, @Nullable String password, Duration timeout) {
        try {
            Object pong = command(port, tls, password, timeout, "PING");
            return "PONG".equals(pong);
        } catch (UncheckedIOException | IllegalStateException e) {
            return false;
        }
    }

    /** Sends one command; over TLS (verifying the host 127.0.0.1) when {@code tls} is not null. */
    static @Nullable Object command(
            int port, @Nullable SSLSocketFactory tls, @Nullable String password, Duration timeout, String... args) {
        try (Socket plain = new Socket()) {
            plain.connect(new InetSocketAddress(FreePorts.loopbackAddress(), port), (int) timeout.toMillis());
            plain.setSoTimeout((int) timeout.toMillis());
            if (tls == null) {
                return exchange(plain, password, args);
            }
            try (SSLSocket ssl = (SSLSocket) tls.createSocket(plain, "127.0.0.1", port, true)) {
                SSLParameters params = ssl.getSSLParameters();
                params.setEndpointIdentificationAlgorithm("HTTPS"); // the certificate must name 127.0.0.1
                ssl.setSSLParameters(params);
                ssl.startHandshake();
                return exchange(ssl, password, args);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(
                    "cannot reach redis on 127.0.0.1:" + port + (tls == null ? "" : " (TLS)"), e);
        }
    }

    private static @Nullable Object exchange(Socket socket, @Nullable String password, String... args)
            throws IOException {
        OutputStream out = socket.getOutputStream();
        InputStream in = new BufferedInputStream(socket.getInputStream());
        if (password != null) {
            write(out, "AUTH", password);
            read(in);
        }
        write(out, args);
        return read(in);
    }

    private static void write(OutputStream out, String... args) throws IOException {
        StringBuilder sb = new StringBuilder().append('*').append(args.length).append("\r\n");
        for (String a : args) {
            byte[] bytes = a.getBytes(StandardCharsets.UTF_8);
            sb.append('$').append(bytes.length).append("\r\n").append(a).append("\r\n");
        }
        out.write(sb.toString().getBytes(StandardCharsets.UTF_8));
        out.flush();
    }

    private static @Nullable Object read(InputStream in) throws IOException {
        int type = in.read();
        String line = line(in);
        switch (type) {
            case '+':
                return line;
            case '-':
                throw new IllegalStateException(line);
            case ':':
                return Long.parseLong(line);
            case '$': {
                int n = Integer.parseInt(line);
                if (n < 0) {
                    return null;
                }
                byte[] data = in.readNBytes(n + 2);
                return new String(data, 0, n, StandardCharsets.UTF_8);
            }
            case '*': {
                int n = Integer.parseInt(line);
                if (n < 0) {
                    return null;
                }
                List<Object> items = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    try {
                        items.add(read(in));
                    } catch (IllegalStateException e) {
                        items.add(e);
                    }
                }
                return items;
            }
            case -1:
                throw new IOException("connection closed");
            default:
                throw new IOException("unexpected RESP type '" + (char) type + "'");
        }
    }

    private static String line(InputStream in) throws IOException {
        StringBuilder sb = new StringBuilder();
        int c;
        while ((c = in.read()) != -1) {
            if (c == '\r') {
                in.read(); // '\n'
                break;
            }
            sb.append((char) c);
        }
        return sb.toString();
    }
}

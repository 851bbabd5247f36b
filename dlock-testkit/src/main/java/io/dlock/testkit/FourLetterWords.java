package io.dlock.testkit;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Optional;

/** Sends a ZooKeeper four-letter word such as {@code ruok} over a plain socket. */
final class FourLetterWords {

    private FourLetterWords() {}

    /**
     * Returns the server's whole answer, or empty if it did not connect or answer within {@code
     * timeout} (a SIGSTOPped server still accepts into the kernel backlog, so the read times out).
     */
    static Optional<String> ask(int port, String word, Duration timeout) {
        int millis = (int) Math.max(1, Math.min(Integer.MAX_VALUE, timeout.toMillis()));
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress(FreePorts.loopbackAddress(), port), millis);
            socket.setSoTimeout(millis);
            OutputStream out = socket.getOutputStream();
            out.write(word.getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = socket.getInputStream();
            return Optional.of(new String(in.readAllBytes(), StandardCharsets.US_ASCII));
        } catch (IOException e) {
            return Optional.empty();
        }
    }

    static boolean isOk(int port, Duration timeout) {
        return ask(port, "ruok", timeout).map("imok"::equals).orElse(false);
    }
}

package io.dlock.spring.boot;

import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;

/**
 * Copies what is written to {@code System.err} (where slf4j-simple writes, looking the stream up at
 * each line) while it is open, still passing it through.
 */
final class CapturedStderr implements AutoCloseable {
    private final PrintStream original = System.err;
    private final ByteArrayOutputStream copy = new ByteArrayOutputStream();

    CapturedStderr() {
        OutputStream tee = new OutputStream() {
            @Override
            public void write(int b) {
                synchronized (copy) {
                    copy.write(b);
                }
                original.write(b);
            }

            @Override
            public void write(byte[] b, int off, int len) {
                synchronized (copy) {
                    copy.write(b, off, len);
                }
                original.write(b, off, len);
            }
        };
        System.setErr(new PrintStream(tee, true, StandardCharsets.UTF_8));
    }

    /** The lines written so far. */
    List<String> lines() {
        synchronized (copy) {
            return Arrays.asList(copy.toString(StandardCharsets.UTF_8).split("\n"));
        }
    }

    /** The lines written so far at WARN that contain every one of {@code parts}. */
    List<String> warnings(String... parts) {
        return lines().stream()
                .filter(l -> l.contains(" WARN "))
                .filter(l -> Arrays.stream(parts).allMatch(l::contains))
                .toList();
    }

    @Override
    public void close() {
        System.err.flush();
        System.setErr(original);
    }
}

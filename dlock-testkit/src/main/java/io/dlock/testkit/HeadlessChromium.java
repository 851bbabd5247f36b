package io.dlock.testkit;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Debian's {@code chromium} run headless, for tests that check an HTML report renders in a real
 * browser: {@link #dumpDom} returns the DOM after the page was parsed and laid out, {@link
 * #screenshot} a PNG of it. A missing binary is an {@link IllegalStateException} naming the
 * package; tests never skip.
 *
 * <p>Each call starts one browser process with its own throwaway profile directory, waits at most
 * {@link #TIMEOUT_SECONDS} for it, and kills it (and its children) if it does not end.
 *
 * <p>Thread-safety: stateless; calls may run in parallel.
 */
public final class HeadlessChromium {

    /** The system property that names the browser binary instead of the PATH. */
    public static final String BINARY_PROPERTY = "dlock.test.chromium";

    /** The longest one browser run may take. */
    public static final long TIMEOUT_SECONDS = 90;

    private HeadlessChromium() {}

    /**
     * The browser binary: {@code -Ddlock.test.chromium}, else {@code chromium} or {@code
     * chromium-browser} on the PATH.
     *
     * <p>Blocking: never. Thread-safety: safe. On failure: an exception naming the package.
     *
     * @return the binary's path
     * @throws IllegalStateException if there is none
     */
    public static String binary() {
        String configured = System.getProperty(BINARY_PROPERTY);
        if (configured != null && !configured.isBlank()) {
            if (!Files.isExecutable(Path.of(configured))) {
                throw new IllegalStateException("chromium '" + configured + "' (from -D" + BINARY_PROPERTY
                        + ") is not an executable file. Install the browser (Debian/Ubuntu: apt-get install"
                        + " chromium)");
            }
            return configured;
        }
        String path = System.getenv("PATH");
        if (path != null) {
            for (String name : List.of("chromium", "chromium-browser")) {
                for (String d : path.split(File.pathSeparator)) {
                    Path candidate = Path.of(d, name);
                    if (Files.isExecutable(candidate)) {
                        return candidate.toString();
                    }
                }
            }
        }
        throw new IllegalStateException("chromium not found on the PATH: the report tests render the HTML in a real"
                + " browser. Install it (Debian/Ubuntu: apt-get install chromium) or point -D" + BINARY_PROPERTY
                + "=/path/to/chromium at it");
    }

    /**
     * Loads {@code html} and returns the serialized DOM ({@code --dump-dom}).
     *
     * <p>Blocking: up to {@link #TIMEOUT_SECONDS}. Thread-safety: safe. On failure: an exception;
     * the browser is killed.
     *
     * @param html a local HTML file
     * @return the DOM as HTML text
     * @throws IllegalStateException if the browser is missing, fails or takes too long
     */
    public static String dumpDom(Path html) {
        return new String(run(List.of("--dump-dom", html.toUri().toString())), StandardCharsets.UTF_8);
    }

    /**
     * Loads {@code html} in a window of {@code width} x {@code height} and writes a PNG of it.
     *
     * <p>Blocking: up to {@link #TIMEOUT_SECONDS}. Thread-safety: safe. On failure: an exception;
     * the browser is killed.
     *
     * @param html a local HTML file
     * @param png where to write the screenshot
     * @param width the window's width in pixels
     * @param height the window's height in pixels
     * @return {@code png}
     * @throws IllegalStateException if the browser is missing, fails, takes too long or writes
     *     nothing
     */
    public static Path screenshot(Path html, Path png, int width, int height) {
        run(List.of(
                "--screenshot=" + png.toAbsolutePath(),
                "--window-size=" + width + "," + height,
                "--hide-scrollbars",
                html.toUri().toString()));
        if (!Files.isRegularFile(png)) {
            throw new IllegalStateException("chromium wrote no screenshot to " + png);
        }
        return png;
    }

    private static byte[] run(List<String> args) {
        String binary = binary();
        Path profile;
        Path log;
        try {
            profile = Files.createTempDirectory("dlock-chromium-");
            log = Files.createTempFile("dlock-chromium-", ".log");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        List<String> command = new ArrayList<>(List.of(
                binary,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-extensions",
                "--user-data-dir=" + profile));
        command.addAll(args);
        Process p = null;
        try {
            p = new ProcessBuilder(command)
                    .redirectError(log.toFile())
                    .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
                    .start();
            Process started = p;
            byte[][] out = new byte[1][];
            Thread reader = new Thread(
                    () -> {
                        try {
                            out[0] = started.getInputStream().readAllBytes();
                        } catch (IOException e) {
                            out[0] = new byte[0];
                        }
                    },
                    "chromium-stdout");
            reader.setDaemon(true);
            reader.start();
            if (!p.waitFor(TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
                throw new IllegalStateException("chromium did not finish within " + TIMEOUT_SECONDS + " s: " + command);
            }
            reader.join(TimeUnit.SECONDS.toMillis(10));
            if (p.exitValue() != 0) {
                throw new IllegalStateException("chromium exited with " + p.exitValue() + ": " + command + "\n"
                        + Files.readString(log, StandardCharsets.UTF_8));
            }
            byte[] result = out[0];
            return result == null ? new byte[0] : result;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot run " + command, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while chromium ran", e);
        } finally {
            if (p != null) {
                p.descendants().forEach(ProcessHandle::destroyForcibly);
                p.destroyForcibly();
            }
            deleteTree(profile);
            try {
                Files.deleteIfExists(log);
            } catch (IOException e) {
                // a temp file left behind is harmless
            }
        }
    }

    private static void deleteTree(Path dir) {
        try (var walk = Files.walk(dir)) {
            walk.sorted(java.util.Comparator.reverseOrder())
                    .forEach(f -> f.toFile().delete());
        } catch (IOException | UncheckedIOException e) {
            // a temp directory left behind is harmless
        }
    }
}

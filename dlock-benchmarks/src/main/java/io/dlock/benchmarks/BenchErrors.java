package io.dlock.benchmarks;

import java.net.BindException;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What to do about a bench run that could not start: install the Debian package of a missing
 * server (the testkit's messages name it), point {@code --redis-server} at a real binary, or free
 * a taken port. (dlock-cli's {@code ErrorAdvice} does the same for demo and torture.)
 *
 * <p>Thread-safety: stateless.
 */
final class BenchErrors {

    private static final Pattern PACKAGE = Pattern.compile("apt-get install ([a-z0-9][a-z0-9.+-]*)");

    private BenchErrors() {}

    static Optional<String> advice(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            String message = t.getMessage() == null ? "" : t.getMessage();
            Matcher m = PACKAGE.matcher(message);
            if (m.find()) {
                return Optional.of(
                        "install the Debian package " + m.group(1) + " (sudo apt-get install " + m.group(1) + ")");
            }
            if (message.startsWith("redis-server '") && message.contains("not an executable")) {
                return Optional.of("give --redis-server the path of a redis-server binary, or drop the option and"
                        + " install the Debian package redis-server (sudo apt-get install redis-server)");
            }
            if (t instanceof BindException || message.contains("Address already in use")) {
                return Optional.of("a port is already taken: stop the process that listens on it (ss -ltnp shows"
                        + " it) and run again");
            }
        }
        return Optional.empty();
    }
}

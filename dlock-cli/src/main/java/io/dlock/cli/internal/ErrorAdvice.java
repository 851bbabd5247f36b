package io.dlock.cli.internal;

import java.net.BindException;
import java.net.ConnectException;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Turns why a command could not start into what the user can do about it: install the Debian
 * package of a missing server binary, free or change a port that is taken, start the server a URI
 * names. The testkit's messages name the package ({@code apt-get install redis-server}); this
 * reads them and the exception's causes.
 *
 * <p>Thread-safety: stateless.
 */
public final class ErrorAdvice {

    private static final Pattern PACKAGE = Pattern.compile("apt-get install ([a-z0-9][a-z0-9.+-]*)");
    private static final Pattern NOT_EXECUTABLE = Pattern.compile("^(redis-server|etcd|memcached) '");

    private ErrorAdvice() {}

    /**
     * What to do about {@code failure}, if this class recognises it.
     *
     * @param failure why a command could not run
     * @return one sentence of advice, or empty
     */
    public static Optional<String> advice(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            String message = t.getMessage() == null ? "" : t.getMessage();
            Matcher m = PACKAGE.matcher(message);
            if (m.find()) {
                return Optional.of(
                        "install the Debian package " + m.group(1) + " (sudo apt-get install " + m.group(1) + ")");
            }
            Matcher binary = NOT_EXECUTABLE.matcher(message);
            if (binary.find()) {
                String name = binary.group(1);
                String pkg = name.equals("etcd") ? "etcd-server" : name;
                return Optional.of("point the setting at the " + name + " binary, or unset it and install the Debian"
                        + " package " + pkg + " (sudo apt-get install " + pkg + ")");
            }
            if (t instanceof BindException || message.contains("Address already in use")) {
                return Optional.of("a port is already taken: stop the process that listens on it (ss -ltnp shows"
                        + " it) or choose another port");
            }
            if (t instanceof ConnectException || message.contains("Connection refused")) {
                return Optional.of("nothing answers at the address the URI names: start the server, or correct the"
                        + " host and port in --uri");
            }
        }
        return Optional.empty();
    }
}

package io.dlock.testkit;

/**
 * A coordination server started for tests, listening on 127.0.0.1 on its own port.
 *
 * <p>Thread-safety: implementations are safe from any thread; lifecycle calls are serialized.
 */
public interface TestServer extends AutoCloseable {

    /**
     * Returns the address clients connect to, {@code "127.0.0.1:PORT"}.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: never fails; the value
     * stays the same across {@link #restart()} and after {@link #close()}.
     *
     * @return host and port separated by a colon
     */
    default String connectString() {
        return "127.0.0.1:" + port(); // every test server listens on loopback only
    }

    /**
     * Returns the TCP port the server listens on.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: never fails; the port is
     * the same across {@link #restart()}.
     *
     * @return the port
     */
    int port();

    /**
     * Returns a dlock backend URI for this server, for example {@code
     * zookeeper://127.0.0.1:PORT/<namespace>}.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: {@link
     * IllegalArgumentException} for a namespace that is blank or contains whitespace.
     *
     * @param namespace the root path or key prefix under which dlock keeps its data; one leading
     *     {@code '/'} is ignored
     * @return the URI as a string
     * @throws IllegalArgumentException if {@code namespace} is blank or contains whitespace
     */
    String uri(String namespace);

    /**
     * Checks a namespace for {@link #uri(String)} and returns it without its one optional leading
     * {@code '/'}.
     *
     * <p>Blocking: never. Thread-safety: pure. On failure: {@link IllegalArgumentException} for a
     * null or blank namespace, one with whitespace, or {@code "/"} alone.
     *
     * @param namespace the namespace a test passed
     * @return the namespace without a leading {@code '/'}
     * @throws IllegalArgumentException if it is not usable
     */
    static String checkNamespace(String namespace) {
        String ns = namespace == null ? "" : namespace.startsWith("/") ? namespace.substring(1) : namespace;
        if (ns.isBlank() || ns.chars().anyMatch(Character::isWhitespace)) {
            throw new IllegalArgumentException("namespace must be non-blank without whitespace (one leading '/' is"
                    + " ignored), was " + (namespace == null ? "null" : "'" + namespace + "'"));
        }
        return ns;
    }

    /**
     * Stops the server and starts it again on the same port and data directory.
     *
     * <p>Blocking: until the server serves requests again. Thread-safety: safe from any thread.
     * On failure: {@link IllegalStateException} if the server is closed or does not serve again in
     * time; the server is then left stopped.
     *
     * @throws IllegalStateException if closed or the restart fails
     */
    void restart();

    /**
     * Stops the server and deletes the data directory the testkit created for it.
     *
     * <p>Blocking: until the server has stopped. Thread-safety: safe from any thread; idempotent.
     * On failure: never throws; a directory that cannot be deleted is left behind and logged.
     */
    @Override
    void close();
}

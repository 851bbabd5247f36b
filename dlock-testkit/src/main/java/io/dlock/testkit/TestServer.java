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

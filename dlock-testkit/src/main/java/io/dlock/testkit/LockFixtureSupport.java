package io.dlock.testkit;

import io.dlock.LockClient;
import io.dlock.LockOptions;
import java.util.ArrayList;
import java.util.List;

/**
 * The client bookkeeping every backend's test support shares: clients (and anything else a test
 * opens) are tracked and closed after the test, last opened first. The backend supplies {@link
 * #uri(String)} and the other {@link LockFixture} hooks, and calls {@link #closeTracked()} from its
 * own {@code @AfterEach} (before any check of what the server still holds).
 *
 * <p>Thread-safety: safe from any thread; tests open clients from the threads they start.
 */
public abstract class LockFixtureSupport implements LockFixture {
    private final List<AutoCloseable> tracked = new ArrayList<>();

    /**
     * A new client with the {@link #patient()} options, closed after the test.
     *
     * <p>Blocking: until connected. Thread-safety: safe. On failure: the connect's exception; nothing
     * is tracked.
     *
     * @return the client
     */
    public LockClient client() {
        return client(patient());
    }

    @Override
    public LockClient client(String options) {
        return track(LockClient.connect(uri(options)));
    }

    /**
     * A new client with explicit options, closed after the test.
     *
     * <p>Blocking: until connected. Thread-safety: safe. On failure: the connect's exception; nothing
     * is tracked.
     *
     * @param options the options (URI query options are not added)
     * @return the client
     */
    public LockClient client(LockOptions options) {
        return track(LockClient.connect(uri(""), options));
    }

    /**
     * Closes {@code closeable} after the test, before everything opened earlier.
     *
     * @param closeable what to close
     * @param <T> its type
     * @return {@code closeable}
     */
    public <T extends AutoCloseable> T track(T closeable) {
        synchronized (tracked) {
            tracked.add(closeable);
        }
        return closeable;
    }

    /**
     * Closes everything tracked, last opened first, and forgets it.
     *
     * <p>Blocking: until each is closed. Thread-safety: safe. On failure: closes the rest, then
     * throws the first failure with the others suppressed.
     *
     * @throws Exception the first close that failed
     */
    protected void closeTracked() throws Exception {
        List<AutoCloseable> all;
        synchronized (tracked) {
            all = new ArrayList<>(tracked);
            tracked.clear();
        }
        Exception first = null;
        for (int i = all.size() - 1; i >= 0; i--) {
            try {
                all.get(i).close();
            } catch (Exception e) {
                if (first == null) {
                    first = e;
                } else {
                    first.addSuppressed(e);
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }
}

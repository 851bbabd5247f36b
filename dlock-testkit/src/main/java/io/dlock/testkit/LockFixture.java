package io.dlock.testkit;

import io.dlock.LockClient;
import java.time.Duration;
import java.util.List;

/**
 * What a backend's test fixture supplies to the testkit's contract tests ({@link
 * ExclusiveLockContract}, {@link PrimitivesContract}): clients on a real server, and a view of the
 * entries the server keeps. A backend's test support class implements it once; each IT then
 * implements the contracts it passes.
 *
 * <p>The hooks are called from the test thread and from the threads the tests start, so they must
 * be thread-safe. Clients from {@link #client(String)} are closed by the fixture after each test.
 */
public interface LockFixture {

    /**
     * A new client for this test, closed by the fixture after it.
     *
     * @param options extra URI query options ({@code "a=1&b=2"}), or {@code ""}
     */
    LockClient client(String options);

    /** The URI {@link #client(String)} connects to, for clients the test closes itself or child JVMs. */
    String uri(String options);

    /** The backend's name as errors name it ({@code "lock 'x' on <name>"}). */
    String backendName();

    /** The entries (holders and waiters, in queue order) the server keeps for exclusive lock {@code lock}. */
    List<String> entries(String lock);

    /**
     * Options for clients that may be slow to answer (child JVMs, many waiters): a backend whose
     * sessions expire quickly makes them longer. Default: none.
     */
    default String patient() {
        return "";
    }

    /** Options that give a lost holder a short lease or session, about 2 s. */
    String shortLease();

    /** How soon after a {@link #shortLease()} holder is killed the next waiter must get the lock. */
    Duration crashReleaseBound();

    /** A new client with {@link #patient()} options, closed by the fixture after the test. */
    default LockClient newClient() {
        return client(patient());
    }

    /** Joins URI option strings, skipping empty ones. */
    static String options(String... parts) {
        return String.join(
                "&", java.util.Arrays.stream(parts).filter(p -> !p.isEmpty()).toList());
    }
}

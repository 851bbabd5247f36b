package io.dlock.spi;

import java.time.Instant;
import java.util.Objects;

/**
 * A data-loss fence: a span during which a backend grants nothing under part of its namespace,
 * because the server lost its data (a restart without persistence, a flush, a rebuilt member) or
 * started less than a lease ago, and a grant it forgot may still be valid in its holder's eyes.
 *
 * <p>Thread-safety: immutable.
 *
 * @param scope what the fence covers, in the backend's terms (a key prefix, a Cluster slot, a
 *     namespace, a server address)
 * @param until when grants resume (server clock, as the client read it)
 * @param reason what was noticed, for operators
 */
public record DataLossFence(String scope, Instant until, String reason) {

    /** Checks the fields. */
    public DataLossFence {
        Objects.requireNonNull(scope, "scope");
        Objects.requireNonNull(until, "until");
        Objects.requireNonNull(reason, "reason");
    }

    /**
     * One line for logs, messages and the {@code inspect} command.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @return for example {@code data-loss fence on prefix 'dlock' until 2026-…Z: its epoch marker
     *     is missing (…)}
     */
    public String describe() {
        return "data-loss fence on " + scope + " until " + until + ": " + reason;
    }
}

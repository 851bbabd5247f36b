package io.dlock;

import java.time.Instant;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * Who leads an election, as the server recorded it when {@link LeaderElection#currentLeader()}
 * read it: an answer for any client, candidate or not ("which node runs the scheduler now?").
 *
 * <p>The answer is a snapshot: by the time it is read the term may have ended. Use it to observe
 * and to route, never to decide who may write; a writer checks its own term ({@link
 * LeaderElection#leadership()}) and the resource checks the term number.
 *
 * <p>Thread-safety: immutable.
 *
 * @param election the election's name
 * @param term the term number: the leader's {@link Lease#fencingToken()} for this term (where the
 *     leader's client handed the term on inside its JVM, the server's number without those local
 *     steps, which are below it)
 * @param clientId the leading client as the backend knows it (a session or client id), or null
 *     where the backend does not record it
 * @param host the leader's host name, or null where the backend does not record it
 * @param pid the leader's process id, or -1 where the backend does not record it
 * @param since when the term began, or null where the backend cannot tell
 * @param self whether the leader is the candidate of the {@link LeaderElection} that was asked
 */
public record Leader(
        String election,
        long term,
        @Nullable String clientId,
        @Nullable String host,
        long pid,
        @Nullable Instant since,
        boolean self) {

    /** Checks the required components. */
    public Leader {
        Objects.requireNonNull(election, "election");
    }
}

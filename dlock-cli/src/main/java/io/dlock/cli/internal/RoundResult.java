package io.dlock.cli.internal;

import java.util.List;

/**
 * The outcome of one round of {@code dlock demo}.
 *
 * <p>Thread-safety: immutable.
 *
 * @param number the round's number, from 1
 * @param mode what the round did, such as {@code no lock} or {@code dlock + kill -9}
 * @param stock the stock the round started with
 * @param sold items sold (accepted writes that lowered the stock)
 * @param oversold items sold beyond the stock, never negative
 * @param staleWritesRejected writes the stock refused because their fencing token was stale
 * @param notes one line on what happened, for the summary table
 * @param problems what went against the round's expectation; empty if it behaved as expected
 */
public record RoundResult(
        int number,
        String mode,
        int stock,
        int sold,
        int oversold,
        int staleWritesRejected,
        String notes,
        List<String> problems) {

    /**
     * Copies {@code problems} so the record stays immutable.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: a null list or element is
     * a {@link NullPointerException}.
     *
     * @param number the round's number
     * @param mode the round's mode
     * @param stock the initial stock
     * @param sold items sold
     * @param oversold items oversold
     * @param staleWritesRejected stale writes rejected
     * @param notes the summary note
     * @param problems the failed expectations
     */
    public RoundResult {
        problems = List.copyOf(problems);
    }

    /**
     * Whether the round behaved as the demo expects.
     *
     * @return true if there are no problems
     */
    public boolean passed() {
        return problems.isEmpty();
    }
}

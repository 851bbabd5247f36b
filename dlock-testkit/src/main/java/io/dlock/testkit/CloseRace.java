package io.dlock.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import io.dlock.LockClient;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;

/**
 * Races {@link LockClient#close()} against acquire calls on that client, many short trials in a
 * row, and checks that every caller returns promptly: with what it asked for, or with the
 * {@link IllegalStateException} that says the client closed. A caller still blocked after close
 * returned is the defect this exists for (an acquisition cancelled before it had sent anything
 * used to wait for ever).
 *
 * <p>Thread-safety: one run per call; the call blocks until its trials are done.
 */
public final class CloseRace {

    /** One acquire form: runs on a fresh client and returns whatever it returns. */
    @FunctionalInterface
    public interface Form {
        Object call(LockClient client, int trial) throws Exception;
    }

    /** What a run saw. */
    public record Result(int trials, int closedSeen, int acquiredSeen) {}

    private CloseRace() {}

    /**
     * Runs trials, rotating through {@code forms}, until {@code maxTrials} or {@code budget} is
     * reached. Each trial opens a client with {@code open}, starts one form on another thread and
     * closes the client at the same moment.
     *
     * @throws AssertionError if a caller is still blocked 5 s (scaled) after close returned, or
     *     fails with anything but the closed client's {@link IllegalStateException}
     */
    public static Result run(Supplier<LockClient> open, List<Form> forms, int maxTrials, Duration budget)
            throws Exception {
        ExecutorService callers = Executors.newCachedThreadPool();
        long end = System.nanoTime() + budget.toNanos();
        int trials = 0;
        int closed = 0;
        int acquired = 0;
        try {
            while (trials < maxTrials && System.nanoTime() - end < 0) {
                Form form = forms.get(trials % forms.size());
                int trial = trials;
                LockClient client = open.get();
                CyclicBarrier start = new CyclicBarrier(2);
                Future<Object> call = callers.submit(() -> {
                    start.await();
                    try {
                        Object got = form.call(client, trial);
                        return got instanceof CompletableFuture<?> f ? f.get() : got;
                    } catch (IllegalStateException | ExecutionException e) {
                        return e;
                    }
                });
                start.await();
                client.close();
                Object outcome;
                try {
                    outcome = call.get(Timing.scale(Duration.ofSeconds(5)).toMillis(), TimeUnit.MILLISECONDS);
                } catch (TimeoutException e) {
                    call.cancel(true);
                    throw new AssertionError(
                            "trial " + trial + " (form " + (trial % forms.size())
                                    + "): the caller was still blocked 5 s after close() returned",
                            e);
                }
                if (outcome instanceof ExecutionException ee) {
                    outcome = ee.getCause();
                }
                if (outcome instanceof Throwable t) {
                    assertThat(t).as("trial %d", trial).isInstanceOf(IllegalStateException.class);
                    assertThat(t.getMessage()).as("trial %d", trial).containsIgnoringCase("close");
                    closed++;
                } else {
                    acquired++;
                }
                trials++;
            }
        } finally {
            callers.shutdownNow();
        }
        return new Result(trials, closed, acquired);
    }
}

package io.dlock.testkit;

import io.dlock.LeaderElection;
import io.dlock.Lease;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Samples the {@link LeaderElection#leadership()} of several candidates every 10 ms on a thread of
 * its own and counts the samples in which two candidates led at once.
 *
 * <p>Reading the candidates one after another is not a snapshot: a candidate read as leading may
 * have handed over before the next one is read as leading. So each sample reads every candidate
 * twice, in the same order, and counts a candidate as leading only if both reads saw the same valid
 * term. A term never becomes valid again, so such a term was valid over the whole sample, and two of
 * them mean two leaders at one instant: no false alarm, however the threads are scheduled.
 *
 * <p>Thread-safety: start and close from the test thread; the counters from any thread.
 */
final class LeadershipSampler implements AutoCloseable {
    private final List<LeaderElection> candidates;
    private final Thread thread;
    private final AtomicInteger samples = new AtomicInteger();
    private final List<String> violations = new CopyOnWriteArrayList<>();
    private volatile boolean running = true;

    private LeadershipSampler(List<LeaderElection> candidates, Duration period) {
        this.candidates = List.copyOf(candidates);
        this.thread = new Thread(
                () -> {
                    while (running) {
                        sample();
                        try {
                            Thread.sleep(period.toMillis());
                        } catch (InterruptedException e) {
                            return;
                        }
                    }
                },
                "leadership-sampler");
        this.thread.setDaemon(true);
    }

    /** Starts sampling {@code candidates} every 10 ms. */
    static LeadershipSampler start(List<LeaderElection> candidates) {
        LeadershipSampler s = new LeadershipSampler(candidates, Duration.ofMillis(10));
        s.thread.start();
        return s;
    }

    private void sample() {
        long[] first = read();
        long[] second = read();
        List<String> leading = new ArrayList<>();
        for (int i = 0; i < first.length; i++) {
            if (first[i] != 0 && first[i] == second[i]) {
                leading.add(candidates.get(i).name() + "#" + i + " term " + first[i]);
            }
        }
        if (leading.size() > 1) {
            violations.add(String.join(", ", leading));
        }
        samples.incrementAndGet();
    }

    /** Each candidate's valid term number, or 0. */
    private long[] read() {
        long[] out = new long[candidates.size()];
        for (int i = 0; i < out.length; i++) {
            Optional<Lease> term = candidates.get(i).leadership();
            out[i] = term.map(Lease::fencingToken).orElse(0L);
        }
        return out;
    }

    int samples() {
        return samples.get();
    }

    List<String> violations() {
        return List.copyOf(violations);
    }

    @Override
    public void close() throws InterruptedException {
        running = false;
        thread.join(5_000);
    }
}

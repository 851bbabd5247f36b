package io.dlock.cli.internal.torture;

import io.dlock.testkit.FencedStore;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;

/**
 * Listens to a torture run for the progress line (phase, elapsed, operations so far, faults
 * injected) and keeps its recording for the report.
 *
 * <p>Thread-safety: the run's thread writes; {@link #status()} is read from the progress ticker,
 * so what it reads is volatile or atomic.
 */
public final class TortureProgress implements TortureListener {

    private final long started = System.nanoTime();
    private final AtomicInteger faults = new AtomicInteger();
    private volatile String phase = "starting";
    private volatile @Nullable FencedStore store;
    private volatile @Nullable TortureRecording recording;

    /** Creates a listener; the clock starts now. */
    public TortureProgress() {}

    @Override
    public void phase(String phase) {
        this.phase = phase;
    }

    @Override
    public void store(FencedStore store) {
        this.store = store;
    }

    @Override
    public void faultInjected(FaultKind kind) {
        faults.incrementAndGet();
    }

    @Override
    public void finished(TortureRecording recording) {
        this.recording = recording;
    }

    /**
     * The run's recording, once it finished.
     *
     * @return the recording, or empty if the run did not get that far
     */
    public Optional<TortureRecording> recording() {
        return Optional.ofNullable(recording);
    }

    /**
     * One status line: {@code torture: faults, 12.3s, 4567 operations, 3 faults injected}.
     *
     * @return the line
     */
    public String status() {
        FencedStore s = store;
        return "torture: " + phase + ", " + TortureRun.seconds(Duration.ofNanos(System.nanoTime() - started))
                + " elapsed, " + (s == null ? 0 : s.accessCount()) + " operations, " + faults.get()
                + " faults injected";
    }
}

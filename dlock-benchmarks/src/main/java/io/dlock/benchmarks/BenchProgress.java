package io.dlock.benchmarks;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import java.io.PrintWriter;
import java.io.Writer;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Progress of {@code dlock bench}: the workload running, elapsed time, results and operations
 * measured so far. On a terminal one status line redrawn in place; otherwise a plain line every
 * {@link #PLAIN_EVERY}; nothing with {@code --quiet}. The run's own log lines go through {@link
 * #writer()}, which wipes the status line first. (dlock-cli's {@code Progress} does the same for
 * torture; this module does not depend on dlock-cli.)
 *
 * <p>Concurrency: a daemon ticker draws, the run writes; both under {@code lock}. Thread-safety:
 * safe from any thread.
 */
final class BenchProgress implements AutoCloseable {

    static final Duration PLAIN_EVERY = Duration.ofSeconds(10);
    private static final String WIPE = "\r\033[K";

    enum Mode {
        LINE,
        PLAIN,
        OFF
    }

    private final Object lock = new Object();
    private final PrintWriter target;
    private final Mode mode;
    private final long started = System.nanoTime();
    private final AtomicLong results = new AtomicLong();
    private final AtomicLong ops = new AtomicLong();
    private final PrintWriter writer;
    private final Thread ticker;
    private volatile String phase = "starting servers";

    @GuardedBy("lock")
    private boolean shown;

    @GuardedBy("lock")
    private boolean atLineStart = true;

    @GuardedBy("lock")
    private boolean closed;

    BenchProgress(PrintWriter target, Mode mode) {
        this.target = target;
        this.mode = mode;
        this.writer = new PrintWriter(new Wiping(), true);
        this.ticker = new Thread(this::tick, "dlock-bench-progress");
        ticker.setDaemon(true);
        if (mode != Mode.OFF) {
            ticker.start();
        }
    }

    static Mode auto(boolean quiet) {
        return quiet ? Mode.OFF : System.console() != null ? Mode.LINE : Mode.PLAIN;
    }

    PrintWriter writer() {
        return writer;
    }

    void phase(String phase) {
        this.phase = phase;
    }

    void measured(Result result) {
        results.incrementAndGet();
        ops.addAndGet(result.ops());
    }

    String status() {
        return String.format(
                Locale.ROOT,
                "bench: %s, %.1fs elapsed, %d results, %d operations measured",
                phase,
                (System.nanoTime() - started) / 1e9,
                results.get(),
                ops.get());
    }

    private void tick() {
        long every = mode == Mode.LINE ? 500 : PLAIN_EVERY.toMillis();
        while (true) {
            try {
                Thread.sleep(every);
            } catch (InterruptedException e) {
                return; // close() stops the ticker
            }
            String text = status();
            synchronized (lock) {
                if (closed) {
                    return;
                }
                if (atLineStart) {
                    if (mode == Mode.LINE) {
                        target.print(WIPE + text);
                        shown = true;
                    } else {
                        target.println("progress: " + text);
                    }
                    target.flush();
                }
            }
        }
    }

    @Override
    public void close() {
        synchronized (lock) {
            if (closed) {
                return;
            }
            closed = true;
            if (shown) {
                target.print(WIPE);
                target.flush();
            }
        }
        ticker.interrupt();
    }

    private final class Wiping extends Writer {
        @Override
        public void write(char[] buffer, int offset, int length) {
            if (length == 0) {
                return;
            }
            synchronized (BenchProgress.this.lock) {
                if (shown) {
                    target.print(WIPE);
                    shown = false;
                }
                target.write(buffer, offset, length);
                atLineStart = buffer[offset + length - 1] == '\n';
            }
        }

        @Override
        public void flush() {
            synchronized (BenchProgress.this.lock) {
                target.flush();
            }
        }

        @Override
        public void close() {
            flush();
        }
    }
}

package io.dlock.cli.internal;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import java.io.PrintWriter;
import java.io.Writer;
import java.time.Duration;
import java.util.Objects;
import java.util.function.Supplier;

/**
 * Progress of a long command: on a terminal one status line redrawn in place twice a second; when
 * the output is not a terminal (CI logs, pipes) a plain status line every {@link #PLAIN_EVERY}; or
 * nothing. The command's own lines go through {@link #writer()}, which wipes the status line
 * before each of them, so the two never mix on a terminal.
 *
 * <p>Concurrency: one daemon ticker thread draws; the command writes from its own thread; both
 * write under {@code lock}. Thread-safety: safe from any thread.
 */
public final class Progress implements AutoCloseable {

    /** How progress is shown. */
    public enum Mode {
        /** One status line redrawn in place (a terminal). */
        LINE,
        /** A plain line now and then (a log). */
        PLAIN,
        /** Nothing (--quiet, --json). */
        OFF
    }

    /** How often a plain status line is printed. */
    public static final Duration PLAIN_EVERY = Duration.ofSeconds(10);

    private static final long LINE_EVERY_MS = 500;
    private static final String WIPE = "\r\033[K";

    private final Object lock = new Object();
    private final PrintWriter target;
    private final Mode mode;
    private final Supplier<String> status;
    private final PrintWriter writer;
    private final Thread ticker;
    private final long everyMillis;

    @GuardedBy("lock")
    private boolean shown;

    @GuardedBy("lock")
    private boolean atLineStart = true;

    @GuardedBy("lock")
    private boolean closed;

    /**
     * Starts showing progress.
     *
     * @param target the command's output
     * @param mode how to show it
     * @param status what to show, called on the ticker thread
     */
    public Progress(PrintWriter target, Mode mode, Supplier<String> status) {
        this(target, mode, status, mode == Mode.LINE ? Duration.ofMillis(LINE_EVERY_MS) : PLAIN_EVERY);
    }

    /**
     * Starts showing progress every {@code every} (tests use a short period).
     *
     * @param target the command's output
     * @param mode how to show it
     * @param status what to show, called on the ticker thread
     * @param every how often to draw
     */
    public Progress(PrintWriter target, Mode mode, Supplier<String> status, Duration every) {
        this.everyMillis = Math.max(1, every.toMillis());
        this.target = Objects.requireNonNull(target, "target");
        this.mode = Objects.requireNonNull(mode, "mode");
        this.status = Objects.requireNonNull(status, "status");
        this.writer = new PrintWriter(new Wiping(), true);
        this.ticker = new Thread(this::tick, "dlock-progress");
        ticker.setDaemon(true);
        if (mode != Mode.OFF) {
            ticker.start();
        }
    }

    /**
     * The mode for a command's output: {@link Mode#LINE} when this process talks to a terminal
     * ({@link System#console()}), otherwise {@link Mode#PLAIN}; {@link Mode#OFF} when {@code
     * quiet}.
     *
     * @param quiet whether the user asked for no progress
     * @return the mode
     */
    public static Mode auto(boolean quiet) {
        if (quiet) {
            return Mode.OFF;
        }
        return System.console() != null ? Mode.LINE : Mode.PLAIN;
    }

    /**
     * A writer for the command's own lines, which keeps them apart from the status line.
     *
     * @return the writer (auto-flushing on println)
     */
    public PrintWriter writer() {
        return writer;
    }

    private void tick() {
        while (true) {
            try {
                Thread.sleep(everyMillis);
            } catch (InterruptedException e) {
                return; // close() stops the ticker
            }
            String text = status.get();
            synchronized (lock) {
                if (closed) {
                    return;
                }
                if (mode == Mode.LINE) {
                    if (atLineStart) {
                        target.print(WIPE + text);
                        target.flush();
                        shown = true;
                    }
                } else if (atLineStart) {
                    target.println("progress: " + text);
                    target.flush();
                }
            }
        }
    }

    /** Stops the ticker and wipes the status line. */
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
                shown = false;
            }
        }
        ticker.interrupt();
    }

    /** Wipes the status line before the command's own text. */
    private final class Wiping extends Writer {
        @Override
        public void write(char[] buffer, int offset, int length) {
            if (length == 0) {
                return;
            }
            synchronized (Progress.this.lock) {
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
            synchronized (Progress.this.lock) {
                target.flush();
            }
        }

        @Override
        public void close() {
            flush();
        }
    }
}

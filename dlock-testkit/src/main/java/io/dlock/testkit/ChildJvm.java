package io.dlock.testkit;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A Java main class running in a child JVM on the current classpath, with its output captured
 * line by line so a test can wait for it, and with kill, pause and resume for fault injection.
 *
 * <p>The child's stderr is merged into its stdout: {@link #lines()} holds both, in the order the
 * child wrote them. Every line is kept for the life of this object.
 *
 * <p>Thread-safety: safe from any thread. {@link #awaitLine} calls share one cursor, so a test
 * should await from one thread at a time.
 */
public final class ChildJvm implements AutoCloseable {

    /*
     * Concurrency: one daemon reader thread appends to `lines` under `lock` and notifies waiters;
     * awaiters scan from `cursor` under the same lock. Writes to stdin are serialized on `stdin`.
     * Failure: a child that exits sets `eof`, so awaitLine fails at once instead of waiting out its
     * timeout. Invariants: 0 <= cursor <= lines.size(); lines only grow.
     */

    /** JVM options used by {@link #start(Class, List)}: small heap, fast start. */
    public static final List<String> DEFAULT_JVM_OPTIONS =
            List.of("-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto");

    private static final Logger LOG = LoggerFactory.getLogger(ChildJvm.class);
    private static final int TAIL_LINES = 20;
    private static final Duration EXIT_WAIT = Duration.ofSeconds(30);

    private final String mainClassName;
    private final Process process;
    private final Object lock = new Object();

    @GuardedBy("lock")
    private final List<String> lines = new ArrayList<>();

    @GuardedBy("lock")
    private int cursor;

    @GuardedBy("lock")
    private boolean eof;

    @GuardedBy("stdin")
    private final Writer stdin;

    private ChildJvm(String mainClassName, Process process) {
        this.mainClassName = mainClassName;
        this.process = process;
        this.stdin = new BufferedWriter(new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8));
        Thread reader = new Thread(this::pump, "dlock-child-" + process.pid() + "-stdout");
        reader.setDaemon(true);
        reader.start();
    }

    /**
     * Starts {@code mainClass} in a child JVM with {@link #DEFAULT_JVM_OPTIONS}.
     *
     * <p>Blocking: until the process is launched, not until its main method runs; use {@link
     * #awaitLine(String, Duration)} for readiness. Thread-safety: safe from any thread. On failure:
     * {@link UncheckedIOException} if the process cannot be launched; nothing is left running.
     *
     * @param mainClass a class with a {@code public static void main(String[])}, on the current
     *     classpath
     * @param args the program arguments
     * @return the running child
     * @throws UncheckedIOException if the JVM cannot be launched
     */
    public static ChildJvm start(Class<?> mainClass, List<String> args) {
        return start(mainClass, args, DEFAULT_JVM_OPTIONS);
    }

    /**
     * Starts {@code mainClass} in a child JVM with the given JVM options, which replace {@link
     * #DEFAULT_JVM_OPTIONS} (concatenate the two lists to add to them).
     *
     * <p>The child runs the same {@code java} binary ({@code java.home}) with {@code -cp} set to
     * this JVM's {@code java.class.path}. Its pid is recorded and killed by a shutdown hook if
     * nobody closes it.
     *
     * <p>Blocking: until the process is launched. Thread-safety: safe from any thread. On failure:
     * {@link UncheckedIOException} if the process cannot be launched; nothing is left running.
     *
     * @param mainClass a class with a {@code public static void main(String[])}
     * @param args the program arguments
     * @param jvmOptions options placed before {@code -cp}, such as {@code -Dkey=value}
     * @return the running child
     * @throws UncheckedIOException if the JVM cannot be launched
     */
    public static ChildJvm start(Class<?> mainClass, List<String> args, List<String> jvmOptions) {
        return start(mainClass, args, jvmOptions, List.of());
    }

    /**
     * Starts a child JVM behind a command prefix that execs it, such as {@link
     * NetworkNamespace#commandPrefix()} (the pid stays the JVM's).
     *
     * <p>Blocking: until the process is launched. Thread-safety: safe from any thread. On failure:
     * {@link UncheckedIOException} if the process cannot be launched; nothing is left running.
     *
     * @param mainClass a class with a {@code public static void main(String[])}
     * @param args the program arguments
     * @param jvmOptions options placed before {@code -cp}
     * @param prefix words placed before the {@code java} command
     * @return the running child
     * @throws UncheckedIOException if the JVM cannot be launched
     */
    public static ChildJvm start(Class<?> mainClass, List<String> args, List<String> jvmOptions, List<String> prefix) {
        return launch(Path.of(System.getProperty("java.home"), "bin", "java"), mainClass, args, jvmOptions, prefix);
    }

    /**
     * Starts {@code mainClass} on another JDK's {@code java} binary (a JDK 21+ for virtual threads
     * while this JVM is a 17), with this JVM's class path, which that JDK must be able to run.
     *
     * <p>Blocking: until the process is launched. Thread-safety: safe from any thread. On failure:
     * {@link UncheckedIOException} if the process cannot be launched; nothing is left running.
     *
     * @param java the {@code java} executable
     * @param mainClass a class with a {@code public static void main(String[])}
     * @param args the program arguments
     * @param jvmOptions options placed before {@code -cp}
     * @return the running child
     * @throws UncheckedIOException if the JVM cannot be launched
     */
    public static ChildJvm startOn(Path java, Class<?> mainClass, List<String> args, List<String> jvmOptions) {
        return launch(Objects.requireNonNull(java, "java"), mainClass, args, jvmOptions, List.of());
    }

    private static ChildJvm launch(
            Path java, Class<?> mainClass, List<String> args, List<String> jvmOptions, List<String> prefix) {
        Objects.requireNonNull(mainClass, "mainClass");
        List<String> command = new ArrayList<>(prefix);
        command.add(java.toString());
        command.addAll(List.copyOf(jvmOptions));
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        command.add(mainClass.getName());
        command.addAll(List.copyOf(args));
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
        Process process;
        try {
            process = builder.start();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start a child JVM for " + mainClass.getName(), e);
        }
        Reaper.track(process);
        LOG.debug("started {} as pid {}", mainClass.getName(), process.pid());
        return new ChildJvm(mainClass.getName(), process);
    }

    /**
     * Returns the child's operating-system process id.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: never fails; the pid
     * stays readable after the child exits.
     *
     * @return the pid
     */
    public long pid() {
        return process.pid();
    }

    /**
     * Returns whether the child process is still running (a paused child is alive).
     *
     * @return true until the process has exited
     */
    public boolean isAlive() {
        return process.isAlive();
    }

    /**
     * Returns a snapshot of every output line so far, stdout and stderr merged.
     *
     * @return an immutable copy, oldest line first
     */
    public List<String> lines() {
        synchronized (lock) {
            return List.copyOf(lines);
        }
    }

    /**
     * Waits for the first line starting with {@code prefix} that appeared after the line returned
     * by the previous await call (or, for the first call, since the start), and moves the cursor
     * past it.
     *
     * <p>Blocking: up to {@code timeout}, less if the child exits first. Thread-safety: safe from
     * any thread; concurrent awaits share the cursor. On failure: {@link IllegalStateException}
     * listing the last 20 lines and whether the child is alive; the cursor does not move.
     *
     * @param prefix the line's required beginning; {@code ""} matches any line
     * @param timeout how long to wait; {@link Duration#ZERO} or a negative value only checks lines
     *     already read
     * @return the matching line
     * @throws IllegalStateException on timeout, if the child's output ended, or if interrupted
     *     (the interrupt flag is restored)
     */
    public String awaitLine(String prefix, Duration timeout) {
        Objects.requireNonNull(prefix, "prefix");
        return awaitLine(line -> line.startsWith(prefix), "a line starting with '" + prefix + "'", timeout);
    }

    /**
     * Like {@link #awaitLine(String, Duration)} with an arbitrary condition.
     *
     * <p>Blocking: up to {@code timeout}. Thread-safety: safe from any thread. On failure: {@link
     * IllegalStateException} listing the last 20 lines; the cursor does not move.
     *
     * @param match the condition a line must meet
     * @param timeout how long to wait; {@link Duration#ZERO} only checks lines already read
     * @return the matching line
     * @throws IllegalStateException on timeout, end of output or interrupt
     */
    public String awaitLine(Predicate<String> match, Duration timeout) {
        Objects.requireNonNull(match, "match");
        return awaitLine(match, "a matching line", timeout);
    }

    /**
     * Waits for {@code count} lines starting with {@code prefix} after the cursor, as repeated
     * {@link #awaitLine(String, Duration)} calls sharing one deadline.
     *
     * <p>Blocking: up to {@code timeout}. Thread-safety: safe from any thread. On failure: {@link
     * IllegalStateException} as for {@code awaitLine}; lines found before the failure stay consumed.
     *
     * @param prefix the lines' required beginning
     * @param count how many lines, zero or more
     * @param timeout how long to wait for all of them
     * @return the matching lines in order
     * @throws IllegalArgumentException if {@code count} is negative
     * @throws IllegalStateException on timeout, end of output or interrupt
     */
    public List<String> awaitLines(String prefix, int count, Duration timeout) {
        if (count < 0) {
            throw new IllegalArgumentException("count must be >= 0, was " + count);
        }
        long deadline = System.nanoTime() + saturatedNanos(timeout);
        List<String> found = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            Duration left = Duration.ofNanos(Math.max(0, deadline - System.nanoTime()));
            found.add(awaitLine(prefix, left));
        }
        return found;
    }

    /**
     * Writes one line to the child's stdin and flushes it.
     *
     * <p>Blocking: until the OS pipe accepts the bytes. Thread-safety: safe from any thread; lines
     * are not interleaved. On failure: {@link UncheckedIOException} if the child has closed its
     * stdin or exited.
     *
     * @param line the text, without a line terminator
     * @throws UncheckedIOException if the pipe is closed
     */
    public void send(String line) {
        synchronized (stdin) {
            try {
                stdin.write(line);
                stdin.write('\n');
                stdin.flush();
            } catch (IOException e) {
                throw new UncheckedIOException(describe() + ": cannot write to stdin", e);
            }
        }
    }

    /**
     * Kills the child with SIGKILL and waits for it to exit.
     *
     * <p>Blocking: until the process has exited, at most 30 s. Thread-safety: safe from any
     * thread; killing a dead child does nothing. On failure: {@link IllegalStateException} if it
     * has not exited after 30 s or the wait is interrupted (flag restored).
     *
     * @throws IllegalStateException if the process does not exit
     */
    public void kill() {
        process.destroyForcibly(); // SIGKILL on Unix; also ends a SIGSTOPped process
        waitFor(EXIT_WAIT);
        Reaper.untrack(process);
    }

    /**
     * Freezes the child with SIGSTOP ({@code kill -STOP pid}), like a long GC pause.
     *
     * <p>Blocking: until the signal is sent, not until every thread has stopped. Thread-safety:
     * safe from any thread. On failure: {@link IllegalStateException} if the child has exited or
     * {@code kill} fails.
     *
     * @throws IllegalStateException if the signal cannot be sent
     */
    public void pause() {
        requireAlive("pause");
        Reaper.signal(pid(), "STOP");
    }

    /**
     * Lets a paused child run again with SIGCONT ({@code kill -CONT pid}).
     *
     * <p>Blocking: until the signal is sent. Thread-safety: safe from any thread; resuming a
     * running child does nothing. On failure: {@link IllegalStateException} if the child has
     * exited or {@code kill} fails.
     *
     * @throws IllegalStateException if the signal cannot be sent
     */
    public void resume() {
        requireAlive("resume");
        Reaper.signal(pid(), "CONT");
    }

    /**
     * Waits for the child to exit and returns its exit code (137 after SIGKILL on Linux).
     *
     * <p>Blocking: up to {@code timeout}. Thread-safety: safe from any thread. On failure: {@link
     * IllegalStateException} with the last 20 lines if the child is still running at the deadline
     * or the wait is interrupted (flag restored); the child is left running.
     *
     * @param timeout how long to wait; {@link Duration#ZERO} only checks
     * @return the exit code
     * @throws IllegalStateException on timeout or interrupt
     */
    public int waitFor(Duration timeout) {
        try {
            if (!process.waitFor(saturatedNanos(timeout), TimeUnit.NANOSECONDS)) {
                throw new IllegalStateException(describe() + " still running after " + timeout + tail());
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(describe() + ": interrupted while waiting for exit", e);
        }
        Reaper.untrack(process);
        return process.exitValue();
    }

    /**
     * Kills the child if it is still running.
     *
     * <p>Blocking: until the process has exited, at most 30 s. Thread-safety: safe from any
     * thread; idempotent. On failure: {@link IllegalStateException} as for {@link #kill()}.
     */
    @Override
    public void close() {
        if (process.isAlive()) {
            kill();
        }
        Reaper.untrack(process);
    }

    @Override
    public String toString() {
        return describe();
    }

    private String awaitLine(Predicate<String> match, String what, Duration timeout) {
        long deadline = System.nanoTime() + saturatedNanos(timeout);
        synchronized (lock) {
            int scanned = cursor;
            while (true) {
                for (; scanned < lines.size(); scanned++) {
                    String line = lines.get(scanned);
                    if (match.test(line)) {
                        cursor = scanned + 1;
                        return line;
                    }
                }
                long left = deadline - System.nanoTime();
                if (eof || left <= 0) {
                    String reason = eof ? "output ended" : "timed out after " + timeout;
                    throw new IllegalStateException(describe() + ": " + reason + " waiting for " + what + tail());
                }
                try {
                    TimeUnit.NANOSECONDS.timedWait(lock, left);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException(describe() + ": interrupted waiting for " + what, e);
                }
            }
        }
    }

    private void pump() {
        try (BufferedReader reader =
                new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
            String line;
            while ((line = reader.readLine()) != null) {
                LOG.debug("[pid={}] {}", process.pid(), line);
                synchronized (lock) {
                    lines.add(line);
                    lock.notifyAll();
                }
            }
        } catch (IOException e) {
            LOG.debug("[pid={}] output closed: {}", process.pid(), e.toString());
        } finally {
            synchronized (lock) {
                eof = true;
                lock.notifyAll();
            }
        }
    }

    private void requireAlive(String action) {
        if (!process.isAlive()) {
            throw new IllegalStateException(describe() + ": cannot " + action + ", the process has exited");
        }
    }

    private String describe() {
        String state = process.isAlive() ? "alive" : "exited(" + process.exitValue() + ")";
        return "child JVM " + mainClassName + " pid " + process.pid() + " [" + state + "]";
    }

    /** The last lines of output, for failure messages. */
    String tail() {
        List<String> last;
        synchronized (lock) {
            last = List.copyOf(lines.subList(Math.max(0, lines.size() - TAIL_LINES), lines.size()));
        }
        StringBuilder text =
                new StringBuilder("\n--- last ").append(last.size()).append(" lines ---");
        for (String line : last) {
            text.append('\n').append(line);
        }
        return text.toString();
    }

    private static long saturatedNanos(Duration timeout) {
        Objects.requireNonNull(timeout, "timeout");
        if (timeout.isNegative()) {
            return 0;
        }
        try {
            return timeout.toNanos();
        } catch (ArithmeticException e) {
            return Long.MAX_VALUE / 2; // keeps deadline arithmetic from overflowing
        }
    }
}

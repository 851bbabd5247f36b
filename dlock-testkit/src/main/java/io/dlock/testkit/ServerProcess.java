package io.dlock.testkit;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.LoggerFactory;

/**
 * A test server that runs as an operating-system process the testkit started (redis-server,
 * memcached, etcd, postgres, mariadbd): its pid, {@code kill -9}, pause and resume, restart on the
 * same port and directory, and close, which stops the process and deletes the directory.
 *
 * <p>Subclasses say how to launch their server and how to tell it is ready; the process control is
 * here once, so that every server answers a fault the same way.
 */
public abstract class ServerProcess implements TestServer {

    /*
     * Concurrency: lifecycle calls (launch, kill, stop, restart, close) and `closed` are guarded by
     * `this`; `process` is volatile so that read-only calls (pid, isAlive) do not wait behind a
     * restart.
     * Failure: a process that does not become ready in time is killed before the exception, whose
     * message holds the tail of its log.
     * Invariants: at most one process per instance is alive; the directory never changes.
     */

    private final Path dir;

    private volatile @Nullable Process process;

    @GuardedBy("this")
    private boolean closed;

    /** Only the testkit's own servers extend this class: the constructor is package-private. */
    ServerProcess(Path dir) {
        this.dir = dir;
    }

    /**
     * Returns the server's own directory (config, data, logs), deleted by {@link #close()}.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: never fails.
     *
     * @return the directory
     */
    public final Path dir() {
        return dir;
    }

    /**
     * Returns the pid of the current process (a new one after each {@link #restart()}).
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: {@link
     * IllegalStateException} if the server was never started.
     *
     * @return the pid
     */
    public final long pid() {
        return running().pid();
    }

    /**
     * Returns whether the process is running (a paused one counts as running).
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: never fails.
     *
     * @return true while the process has not exited
     */
    public final boolean isAlive() {
        Process p = process;
        return p != null && p.isAlive();
    }

    /**
     * Kills the server with SIGKILL and waits for it to exit: what it had not written to disk is
     * lost, as in a crash.
     *
     * <p>Blocking: until the process has exited, at most 30 s. Thread-safety: safe from any thread;
     * killing a dead server does nothing. On failure: {@link IllegalStateException} if it does not
     * exit.
     *
     * @throws IllegalStateException if the process does not exit
     */
    public final synchronized void kill() {
        Process p = process;
        if (p == null || !p.isAlive()) {
            return;
        }
        p.destroyForcibly();
        try {
            if (!p.waitFor(30, TimeUnit.SECONDS)) {
                throw new IllegalStateException(this + " did not exit within 30 s of SIGKILL");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(this + ": interrupted while killing", e);
        }
        Reaper.untrack(p);
    }

    /**
     * Freezes the server with SIGSTOP: connections stay open but nothing is answered.
     *
     * <p>Blocking: until the signal is sent. Thread-safety: safe from any thread. On failure:
     * {@link IllegalStateException} if the server was never started or the signal fails.
     */
    public final synchronized void pause() {
        Reaper.signal(running().pid(), "STOP");
    }

    /**
     * Lets a paused server run again with SIGCONT.
     *
     * <p>Blocking: until the signal is sent. Thread-safety: safe from any thread. On failure:
     * {@link IllegalStateException} if the server was never started or the signal fails.
     */
    public final synchronized void resume() {
        Reaper.signal(running().pid(), "CONT");
    }

    /**
     * Ends the running process the way the server's {@link #restart()} does (SIGKILL for servers
     * whose restart is a crash, a clean shutdown for the SQL servers) and starts a new one on the
     * same port and directory.
     *
     * <p>Blocking: until the new process is ready, at most the server's start timeout scaled by
     * {@link Timing}. Thread-safety: safe from any thread. On failure: {@link IllegalStateException}
     * if closed or it does not serve in time; no process is left running.
     *
     * @throws IllegalStateException if closed or the restart fails
     */
    @Override
    public final synchronized void restart() {
        requireOpen();
        halt();
        launch();
    }

    /**
     * Stops the process ({@link #restart()}'s way) and deletes the directory.
     *
     * <p>Blocking: until the process has exited. Thread-safety: safe from any thread; idempotent.
     * On failure: never throws; problems are logged.
     */
    @Override
    public final synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            halt();
        } catch (RuntimeException e) {
            LoggerFactory.getLogger(getClass()).warn("could not stop {}", this, e);
        } finally {
            Reaper.deleteTempDirectory(dir);
        }
    }

    /** Starts the server's process with {@link #spawn} and waits until it serves. */
    @GuardedBy("this")
    abstract void launch();

    /** How {@link #restart()} and {@link #close()} end the process: SIGKILL unless overridden. */
    @GuardedBy("this")
    void halt() {
        kill();
    }

    /** Starts {@code command} in the directory, its output appended to {@code log}, as the process. */
    @GuardedBy("this")
    final Process spawn(List<String> command, Path log) {
        Process p;
        try {
            p = new ProcessBuilder(command)
                    .directory(dir.toFile())
                    .redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()))
                    .start();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot run " + command.get(0), e);
        }
        Reaper.track(p);
        process = p;
        return p;
    }

    /**
     * Polls {@code ready} every {@code poll} until it holds; a process that exits or stays unready
     * past {@code timeout} is killed and reported with the tail of {@code log} and {@code hint}.
     */
    final void awaitReady(
            Process p,
            Duration timeout,
            Duration poll,
            String readiness,
            BooleanSupplier ready,
            Path log,
            String hint) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!ready.getAsBoolean()) {
            if (!p.isAlive() || System.nanoTime() - deadline > 0) {
                String why = p.isAlive()
                        ? "did not " + readiness + " within " + timeout
                        : "exited with " + p.exitValue() + " while starting";
                destroy(p);
                throw new IllegalStateException(this + " " + why + ":" + tail(log) + hint);
            }
            try {
                Thread.sleep(poll.toMillis()); // polls readiness; these servers offer no start-up callback
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                destroy(p);
                throw new IllegalStateException(this + ": interrupted while starting", e);
            }
        }
    }

    /**
     * Stops the process with {@code signal} (a clean shutdown) and waits up to {@code grace}, then
     * SIGKILL. A stopped server does nothing.
     */
    final synchronized void stopWith(String signal, Duration grace) {
        Process p = process;
        if (p == null || !p.isAlive()) {
            return;
        }
        Reaper.signal(p.pid(), signal);
        try {
            if (!p.waitFor(grace.toMillis(), TimeUnit.MILLISECONDS)) {
                p.destroyForcibly();
                p.waitFor(30, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(this + ": interrupted while stopping", e);
        }
        Reaper.untrack(p);
    }

    /**
     * Runs a short-lived tool (a client, an initialiser) in the directory and returns its output,
     * trimmed; a non-zero exit or a run past {@code timeout} throws with the output.
     */
    final String runTool(List<String> command, Duration timeout, Map<String, String> env) {
        try {
            ProcessBuilder pb =
                    new ProcessBuilder(command).redirectErrorStream(true).directory(dir.toFile());
            pb.environment().putAll(env);
            Process p = pb.start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
            if (!p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                p.destroyForcibly();
                throw new IllegalStateException(this + ": " + command.get(0) + " did not finish in " + timeout);
            }
            if (p.exitValue() != 0) {
                throw new IllegalStateException(
                        this + ": " + String.join(" ", command.subList(0, Math.min(command.size(), 6))) + "… exited "
                                + p.exitValue() + ": " + out);
            }
            return out;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot run " + command.get(0), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(this + ": interrupted running " + command.get(0), e);
        }
    }

    /** The running process, or an exception if the server was never started. */
    final Process running() {
        Process p = process;
        if (p == null) {
            throw new IllegalStateException(this + " was never started");
        }
        return p;
    }

    @GuardedBy("this")
    final void requireOpen() {
        if (closed) {
            throw new IllegalStateException(this + " is closed");
        }
    }

    /** The last 20 lines of a log file, indented, for an exception message; empty if unreadable. */
    static String tail(Path log) {
        try {
            List<String> all = Files.readAllLines(log, StandardCharsets.UTF_8);
            return "\n  " + String.join("\n  ", all.subList(Math.max(0, all.size() - 20), all.size()));
        } catch (IOException e) {
            return "";
        }
    }

    /**
     * Finds a server binary: the system property or environment variable if set (it must be
     * executable), else the first {@code name} on the PATH or in {@code moreDirs}; else an exception
     * naming the Debian package.
     */
    static String binary(
            String name, @Nullable String property, @Nullable String env, String debianPackage, String... moreDirs) {
        String configured = property == null ? null : System.getProperty(property);
        if ((configured == null || configured.isBlank()) && env != null) {
            configured = System.getenv(env);
        }
        if (configured != null && !configured.isBlank()) {
            if (!Files.isExecutable(Path.of(configured))) {
                throw new IllegalStateException(name + " '" + configured + "' (from -D" + property + " or " + env
                        + ") is not an executable file");
            }
            return configured;
        }
        List<String> dirs = new ArrayList<>();
        String path = System.getenv("PATH");
        if (path != null) {
            dirs.addAll(List.of(path.split(File.pathSeparator)));
        }
        dirs.addAll(List.of(moreDirs));
        for (String d : dirs) {
            Path candidate = Path.of(d, name);
            if (Files.isExecutable(candidate)) {
                return candidate.toString();
            }
        }
        String override = property == null ? "" : " or point -D" + property + "=/path/to/" + name + " at it";
        throw new IllegalStateException(name + " not found on the PATH"
                + (moreDirs.length > 0 ? " or in " + String.join(", ", moreDirs) : "")
                + ": these tests need a real server. Install it (Debian/Ubuntu: apt-get install " + debianPackage + ")"
                + override);
    }

    private static void destroy(Process p) {
        p.destroyForcibly();
        try {
            p.waitFor(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        Reaper.untrack(p);
    }
}

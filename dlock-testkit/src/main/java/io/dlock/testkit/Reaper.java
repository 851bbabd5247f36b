package io.dlock.testkit;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Records every child process and temporary directory the testkit creates, and removes them in a
 * JVM shutdown hook if a test forgot to close them; also sends STOP/CONT signals.
 *
 * <p>Concurrency: the registries are concurrent sets; the hook may race with a close, and both
 * killing a dead process and deleting a missing directory are harmless.
 */
final class Reaper {

    private static final Logger LOG = LoggerFactory.getLogger(Reaper.class);

    private static final Set<Process> PROCESSES = ConcurrentHashMap.newKeySet();
    private static final Set<Path> DIRECTORIES = ConcurrentHashMap.newKeySet();

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(Reaper::reapAll, "dlock-testkit-reaper"));
    }

    private Reaper() {}

    static void track(Process process) {
        PROCESSES.add(process);
    }

    static void untrack(Process process) {
        PROCESSES.remove(process);
    }

    static Path createTempDirectory(String prefix) {
        try {
            Path dir = Files.createTempDirectory(prefix);
            DIRECTORIES.add(dir);
            return dir;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create a temporary directory " + prefix + "*", e);
        }
    }

    /** Deletes a directory tree that {@link #createTempDirectory} made; logs instead of throwing. */
    static void deleteTempDirectory(Path dir) {
        try {
            deleteRecursively(dir);
            DIRECTORIES.remove(dir);
        } catch (IOException | UncheckedIOException e) {
            LOG.warn("could not delete {}", dir, e);
        }
    }

    /** Sends a signal such as {@code STOP} or {@code CONT} with the {@code kill} command. */
    static void signal(long pid, String signal) {
        ProcessBuilder builder = new ProcessBuilder("kill", "-" + signal, Long.toString(pid)).redirectErrorStream(true);
        try {
            Process kill = builder.start();
            String output = new String(kill.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!kill.waitFor(10, TimeUnit.SECONDS)) {
                kill.destroyForcibly();
                throw new IllegalStateException("kill -" + signal + " " + pid + " did not finish in 10 s");
            }
            if (kill.exitValue() != 0) {
                throw new IllegalStateException(
                        "kill -" + signal + " " + pid + " exited " + kill.exitValue() + ": " + output.trim());
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot run kill -" + signal + " " + pid, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while sending " + signal + " to " + pid, e);
        }
    }

    private static void reapAll() {
        for (Process process : PROCESSES) {
            process.destroyForcibly(); // SIGKILL also ends a SIGSTOPped process
        }
        for (Process process : PROCESSES) {
            try {
                process.waitFor(5, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
        for (Path dir : DIRECTORIES) {
            try {
                deleteRecursively(dir);
            } catch (IOException | UncheckedIOException e) {
                // The JVM is exiting; nothing better to do than leave it.
            }
        }
    }

    private static void deleteRecursively(Path root) throws IOException {
        if (!Files.exists(root)) {
            return;
        }
        Files.walkFileTree(root, new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
                deleteIfPresent(file);
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult visitFileFailed(Path file, IOException e) throws IOException {
                if (e instanceof NoSuchFileException) {
                    return FileVisitResult.CONTINUE;
                }
                throw e;
            }

            @Override
            public FileVisitResult postVisitDirectory(Path dir, IOException e) throws IOException {
                if (e != null && !(e instanceof NoSuchFileException)) {
                    throw e;
                }
                deleteIfPresent(dir);
                return FileVisitResult.CONTINUE;
            }
        });
    }

    private static void deleteIfPresent(Path path) throws IOException {
        Files.deleteIfExists(path);
    }
}

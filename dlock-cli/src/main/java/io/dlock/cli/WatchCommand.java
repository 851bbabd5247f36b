package io.dlock.cli;

import io.dlock.DistributedLockException;
import io.dlock.cli.internal.DurationConverter;
import io.dlock.cli.internal.admin.AdminConnection;
import io.dlock.cli.internal.admin.WatchEvents;
import io.dlock.spi.DataLossFence;
import io.dlock.spi.LockInspector;
import io.dlock.spi.LockSnapshot;
import java.io.PrintWriter;
import java.time.Duration;
import java.time.LocalTime;
import java.time.format.DateTimeFormatter;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code dlock watch <uri> <name>}: prints grants, releases, expiries and the queue of one lock as
 * they happen, until Ctrl-C (or {@code --duration}, or {@code --events}). ZooKeeper notifies through
 * child watches, etcd through a watch on the lock's prefix; the other backends are read every {@code
 * --poll}, so a change that comes and goes between two reads is not seen. Lease times left are read
 * again every second, so that a grant that ended is called expired only when its lease had run out.
 *
 * <p>Exit status: 0 when stopped; 1 if the server could not be reached; 2 for bad options or URI.
 *
 * <p>Thread-safety: a command object holds parsed options; use one instance per invocation, from
 * one thread.
 */
@Command(
        name = "watch",
        mixinStandardHelpOptions = true,
        sortOptions = false,
        description = {"Prints one lock's grants, releases, expiries and queue changes as they happen, until Ctrl-C."},
        exitCodeListHeading = "%nExit codes:%n",
        exitCodeList = {"0:stopped", "1:the server could not be reached", "2:invalid options or URI"})
public final class WatchCommand implements Callable<Integer> {
    private static final DateTimeFormatter TIME = DateTimeFormatter.ofPattern("HH:mm:ss.SSS");
    private static final Duration LEASE_REFRESH = Duration.ofSeconds(1);

    @Spec
    private CommandSpec spec;

    @Mixin
    private ServerOptions server;

    @Parameters(index = "1", paramLabel = "NAME", description = "The lock's exact name.")
    private String name;

    @Option(
            names = "--duration",
            paramLabel = "DURATION",
            converter = DurationConverter.class,
            description = "Stop after this long (default: until Ctrl-C).")
    private @Nullable Duration duration;

    @Option(names = "--events", paramLabel = "N", description = "Stop after N events (default: until Ctrl-C).")
    private int events;

    @Option(
            names = "--poll",
            paramLabel = "DURATION",
            defaultValue = "200ms",
            converter = DurationConverter.class,
            description = "How often to read where the server cannot notify (default: ${DEFAULT-VALUE}).")
    private Duration poll;

    /** Creates the command; picocli fills in its fields. */
    public WatchCommand() {}

    /**
     * Watches until stopped.
     *
     * <p>Blocking: until Ctrl-C, {@code --duration} or {@code --events}. Thread-safety: one
     * invocation at a time. On failure: returns 1 after printing the reason; reads that fail while
     * watching are printed and tried again.
     *
     * @return the exit status
     * @throws CommandLine.ParameterException for usage errors (exit status 2)
     * @throws InterruptedException if interrupted while watching
     */
    @Override
    public Integer call() throws InterruptedException {
        CommandLine cl = spec.commandLine();
        if (name.isBlank()) {
            throw new CommandLine.ParameterException(cl, "a lock name is required; 'dlock inspect' lists them");
        }
        if (events < 0) {
            throw new CommandLine.ParameterException(cl, "--events must be positive, was " + events);
        }
        if (poll.isZero() || poll.isNegative() || (duration != null && (duration.isZero() || duration.isNegative()))) {
            throw new CommandLine.ParameterException(cl, "--poll and --duration must be positive");
        }
        PrintWriter out = cl.getOut();
        PrintWriter err = cl.getErr();
        try (AdminConnection admin = server.open(spec)) {
            CountDownLatch done = new CountDownLatch(1);
            AtomicInteger printed = new AtomicInteger();
            WatchEvents diff = new WatchEvents();
            LockInspector inspector = admin.inspector();
            out.println("watching lock '" + name + "' on " + admin.backendName() + " (Ctrl-C to stop)");
            List<DataLossFence> fences = fences(inspector);
            for (String line : Admin.fenceLines(fences)) {
                out.println(LocalTime.now().format(TIME) + "  " + line);
            }
            out.flush();
            // Compared without their ends: the end of a fence not yet started moves with the clock.
            AtomicReference<List<String>> lastFences = new AtomicReference<>(scopes(fences));
            ScheduledExecutorService refresher = Executors.newSingleThreadScheduledExecutor(r -> {
                Thread t = new Thread(r, "dlock-watch-refresh");
                t.setDaemon(true);
                return t;
            });
            refresher.scheduleWithFixedDelay(
                    () -> {
                        refreshLeaseTimes(inspector, diff);
                        List<DataLossFence> now = fences(inspector);
                        List<String> before = lastFences.getAndSet(scopes(now));
                        if (!scopes(now).equals(before)) {
                            synchronized (out) {
                                for (String line :
                                        now.isEmpty() ? List.of("data-loss fence over") : Admin.fenceLines(now)) {
                                    out.println(LocalTime.now().format(TIME) + "  " + line);
                                }
                                out.flush();
                            }
                        }
                    },
                    LEASE_REFRESH.toMillis(),
                    LEASE_REFRESH.toMillis(),
                    TimeUnit.MILLISECONDS);
            try (LockInspector.Watch w = inspector.watch(
                    name,
                    poll,
                    locks -> {
                        List<String> lines;
                        synchronized (diff) {
                            lines = diff.next(locks, System.nanoTime());
                        }
                        synchronized (out) {
                            for (String line : lines) {
                                if (done.getCount() == 0) {
                                    return;
                                }
                                out.println(LocalTime.now().format(TIME) + "  " + line);
                                if (events > 0 && printed.incrementAndGet() >= events) {
                                    done.countDown();
                                }
                            }
                            out.flush();
                        }
                    },
                    e -> {
                        synchronized (out) {
                            err.println(LocalTime.now().format(TIME) + "  read failed: " + e.getMessage());
                            err.flush();
                        }
                    })) {
                if (duration == null) {
                    done.await();
                } else {
                    done.await(duration.toMillis(), TimeUnit.MILLISECONDS);
                }
            } finally {
                refresher.shutdownNow();
            }
            synchronized (out) {
                out.flush();
            }
            return 0;
        } catch (DistributedLockException e) {
            return Admin.failed(spec, e);
        }
    }

    /** The fences in force, or none when they cannot be read (the watch's own reads report failures). */
    private static List<DataLossFence> fences(LockInspector inspector) {
        try {
            return inspector.fences();
        } catch (RuntimeException e) {
            return List.of();
        }
    }

    private static List<String> scopes(List<DataLossFence> fences) {
        return fences.stream().map(f -> f.scope() + " " + f.reason()).toList();
    }

    // Renewals change no key a watch sees, so without a fresh lease time left a grant held for longer
    // than one lease would be called expired when it is released. A failed refresh only leaves the
    // older figure in place; the watch's own reads report failures.
    private void refreshLeaseTimes(LockInspector inspector, WatchEvents diff) {
        try {
            List<LockSnapshot> locks = inspector.inspect(name).stream()
                    .filter(l -> l.name().equals(name))
                    .toList();
            long readAt = System.nanoTime();
            synchronized (diff) {
                diff.refresh(locks, readAt);
            }
        } catch (RuntimeException e) {
            // see above
        }
    }
}

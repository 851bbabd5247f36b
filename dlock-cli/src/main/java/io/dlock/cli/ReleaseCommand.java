package io.dlock.cli;

import io.dlock.DistributedLockException;
import io.dlock.cli.internal.admin.AdminConnection;
import io.dlock.cli.internal.admin.SnapshotText;
import io.dlock.spi.EntrySnapshot;
import io.dlock.spi.LockInspector;
import io.dlock.spi.LockSnapshot;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.charset.Charset;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code dlock release --force <uri> <name> [--holder ID] [--yes]}: removes a stuck grant. It shows
 * what it will remove and asks (or not, with {@code --yes}); the next waiter is then granted, with a
 * higher fencing token. A removed holder that is still alive loses its lease ({@code onLost}): at
 * once where the server can tell it (ZooKeeper, Redis, PostgreSQL, etcd), else at its next renewal;
 * the command says which before it asks, and for how long the holder may still act as one. With
 * several holders (readers, semaphore permits) {@code --holder} must name one.
 *
 * <p>Exit status: 0 if the grant was removed (or was already gone); 1 if the server could not be
 * read or changed, or the answer was no; 2 for bad options, a bad URI, a missing name or an unknown
 * holder.
 *
 * <p>Thread-safety: a command object holds parsed options; use one instance per invocation, from
 * one thread.
 */
@Command(
        name = "release",
        mixinStandardHelpOptions = true,
        sortOptions = false,
        description = {
            "Removes a stuck grant by force, after showing it and asking: the next waiter is granted with a"
                    + " higher fencing token, and a live holder loses its lease where the backend can tell it."
        },
        exitCodeListHeading = "%nExit codes:%n",
        exitCodeList = {
            "0:the grant was removed (or was gone already)",
            "1:the server could not be read or changed, or the answer was no",
            "2:invalid options, URI, name or holder"
        })
public final class ReleaseCommand implements Callable<Integer> {

    @Spec
    private CommandSpec spec;

    @Option(names = "--force", description = "Required: a forced release takes a lock away from its holder.")
    private boolean force;

    @Mixin
    private ServerOptions server;

    @Parameters(index = "1", paramLabel = "NAME", description = "The lock's exact name.")
    private String name;

    @Option(
            names = "--holder",
            paramLabel = "ID",
            description = "Only this holder: its client id (as inspect shows it) or its entry key.")
    private @Nullable String holder;

    @Option(names = "--yes", description = "Do not ask (for scripts).")
    private boolean yes;

    /** Creates the command; picocli fills in its fields. */
    public ReleaseCommand() {}

    /**
     * Shows the grant(s), asks, removes them.
     *
     * <p>Blocking: until the server answered and, without {@code --yes}, the user did. Thread-safety:
     * one invocation at a time. On failure: returns 1 after printing the reason; grants removed
     * before the failure stay removed.
     *
     * @return the exit status
     * @throws CommandLine.ParameterException for usage errors (exit status 2), before anything is
     *     changed
     */
    @Override
    public Integer call() {
        CommandLine cl = spec.commandLine();
        if (!force) {
            throw new CommandLine.ParameterException(
                    cl, "release takes a lock away from its holder: add --force to mean it");
        }
        if (name.isBlank()) {
            throw new CommandLine.ParameterException(cl, "a lock name is required; 'dlock inspect' lists them");
        }
        PrintWriter out = cl.getOut();
        try (AdminConnection admin = server.open(spec)) {
            LockInspector inspector = admin.inspector();
            List<LockSnapshot> locks = inspector.inspect(name).stream()
                    .filter(l -> l.name().equals(name))
                    .toList();
            List<LockSnapshot> chosen = new ArrayList<>();
            int held = 0;
            for (LockSnapshot l : locks) {
                held += l.holders().size();
                List<EntrySnapshot> h = l.holders().stream()
                        .filter(e -> holder == null || holder.equals(e.clientId()) || holder.equals(e.key()))
                        .toList();
                if (!h.isEmpty()) {
                    chosen.add(new LockSnapshot(l.name(), l.kind(), l.maxPermits(), h, List.of()));
                }
            }
            List<String> keys = chosen.stream()
                    .flatMap(l -> l.holders().stream())
                    .map(EntrySnapshot::key)
                    .toList();
            if (held == 0) {
                out.println("lock '" + name + "' is not held on " + admin.backendName() + ": nothing to release");
                out.flush();
                return 0;
            }
            if (keys.isEmpty()) {
                throw new CommandLine.ParameterException(
                        cl, "no holder '" + holder + "' of lock '" + name + "'; 'dlock inspect' shows its holders");
            }
            if (holder == null && keys.size() > 1) {
                throw new CommandLine.ParameterException(
                        cl,
                        "lock '" + name + "' has " + keys.size()
                                + " holders; name the one to remove with --holder (client id or entry key)");
            }
            out.println(
                    "will remove " + keys.size() + " grant(s) of lock '" + name + "' on " + admin.backendName() + ":");
            out.println(SnapshotText.table(chosen, Instant.now()));
            out.println(holderWindow(inspector.forcedReleaseNotice(), admin.backendName(), chosen));
            if (!yes && !confirm(out)) {
                out.println("nothing removed");
                out.flush();
                return 1;
            }
            List<String> removed = inspector.forceRelease(name, keys);
            for (String k : keys) {
                out.println((removed.contains(k) ? "removed " : "already gone ") + k);
            }
            List<LockSnapshot> after = inspector.inspect(name).stream()
                    .filter(l -> l.name().equals(name))
                    .toList();
            out.println(
                    after.isEmpty()
                            ? "lock '" + name + "' is now free"
                            : "lock '" + name + "' now:\n" + SnapshotText.table(after, Instant.now()));
            out.flush();
            return 0;
        } catch (DistributedLockException e) {
            return Admin.failed(spec, e);
        }
    }

    /**
     * What a removed holder that is still alive sees, and for how long it may still act as the
     * holder while the next one already does: from the inspector's word and, where the backend
     * records it, the longest lease left of the grants to remove.
     */
    static String holderWindow(LockInspector.ForcedReleaseNotice notice, String backend, List<LockSnapshot> chosen) {
        return switch (notice) {
            case AT_ONCE -> "the holder is told at once (within about 1 s): its lease turns invalid and its onLost"
                    + " listeners run";
            case NEXT_RENEWAL -> {
                Duration longest = chosen.stream()
                        .flatMap(l -> l.holders().stream())
                        .map(EntrySnapshot::leaseLeft)
                        .filter(java.util.Objects::nonNull)
                        .max(Duration::compareTo)
                        .orElse(null);
                yield "warning: on " + backend + " the removed holder may still consider its lease valid for up to "
                        + (longest == null ? "a third of its lease time" : SnapshotText.duration(longest))
                        + " (until its next renewal, every third of its lease), while the next holder already holds"
                        + " the lock; only the fencing token (the next holder's is higher) protects the resource"
                        + " meanwhile";
            }
            case NOT_TOLD -> "warning: on " + backend + " a holder that is still alive is not told: it keeps acting as"
                    + " the holder until it closes its lease or its session ends; only the fencing token (the next"
                    + " holder's is higher) protects the resource meanwhile";
        };
    }

    private static boolean confirm(PrintWriter out) {
        out.print("remove? [y/N] ");
        out.flush();
        try {
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, Charset.defaultCharset()));
            String answer = in.readLine();
            return answer != null && List.of("y", "yes").contains(answer.trim().toLowerCase(Locale.ROOT));
        } catch (IOException e) {
            return false;
        }
    }
}

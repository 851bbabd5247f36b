package io.dlock.cli;

import io.dlock.DistributedLockException;
import io.dlock.cli.internal.admin.AdminConnection;
import io.dlock.cli.internal.admin.SnapshotText;
import io.dlock.spi.LockSnapshot;
import java.io.PrintWriter;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code dlock inspect <uri> [name-prefix]}: every lock under the URI's namespace (or whose name
 * starts with the prefix) with its kind, holders (client, host and pid where the backend records
 * them, fencing token, held for, lease left) and waiters in queue order; a table, or JSON with
 * {@code --json}. Reads only; changes nothing.
 *
 * <p>Exit status: 0 when the server was read (also when nothing is held); 1 if the server could
 * not be read; 2 for bad options or a bad URI.
 *
 * <p>Thread-safety: a command object holds parsed options; use one instance per invocation, from
 * one thread.
 */
@Command(
        name = "inspect",
        mixinStandardHelpOptions = true,
        sortOptions = false,
        description = {
            "Lists the locks on a server: kind, holders (client, host, pid where the backend records them),"
                    + " fencing token, held for, lease left, and the waiting queue in order. Changes nothing."
        },
        exitCodeListHeading = "%nExit codes:%n",
        exitCodeList = {"0:the server was read", "1:the server could not be read", "2:invalid options or URI"})
public final class InspectCommand implements Callable<Integer> {

    @Spec
    private CommandSpec spec;

    @Mixin
    private ServerOptions server;

    @Parameters(
            index = "1",
            arity = "0..1",
            paramLabel = "NAME-PREFIX",
            defaultValue = "",
            description = "Only locks whose name starts with this.")
    private String prefix;

    @Option(names = "--json", description = "Print one JSON array instead of a table.")
    private boolean json;

    /** Creates the command; picocli fills in its fields. */
    public InspectCommand() {}

    /**
     * Reads the server and prints what it holds.
     *
     * <p>Blocking: until the server answered or the connect timeout passed. Thread-safety: one
     * invocation at a time. On failure: returns 1 after printing the reason; nothing is changed.
     *
     * @return the exit status
     * @throws CommandLine.ParameterException for a bad URI (exit status 2)
     */
    @Override
    public Integer call() {
        PrintWriter out = spec.commandLine().getOut();
        try (AdminConnection admin = server.open(spec)) {
            List<LockSnapshot> locks = admin.inspector().inspect(prefix);
            Instant now = Instant.now();
            // On stderr with --json, so that stdout stays one JSON array.
            PrintWriter notes = json ? spec.commandLine().getErr() : out;
            for (String line : Admin.fenceLines(admin.inspector().fences())) {
                notes.println(line);
            }
            notes.flush();
            if (json) {
                out.println(SnapshotText.json(locks, now));
            } else if (locks.isEmpty()) {
                out.println("no lock is held or waited for" + (prefix.isEmpty() ? "" : " under '" + prefix + "'") + " ("
                        + admin.backendName() + ")");
            } else {
                out.println(SnapshotText.table(locks, now));
            }
            out.flush();
            return 0;
        } catch (DistributedLockException e) {
            return Admin.failed(spec, e);
        }
    }
}

package io.dlock.cli;

import io.dlock.DistributedLockException;
import io.dlock.cli.internal.admin.AdminConnection;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/**
 * {@code dlock init <uri>}: marks a brand-new deployment (Redis key prefix, every slot of a Redis
 * Cluster; Memcached servers; an etcd namespace) so that its first grants do not wait out the
 * data-loss fence a server without markers gets. Refuses, changing nothing, where anything was ever
 * written under the namespace. On ZooKeeper and SQL, which keep no fence, it says so and does
 * nothing.
 *
 * <p>Why only on a new deployment: a server that lost its data looks exactly like a new one, and
 * marking it would let a new holder in while an old one may still count its lease valid.
 *
 * <p>Exit status: 0 when marked (or nothing to do); 1 if refused or the server could not be
 * reached; 2 for bad options or a bad URI.
 *
 * <p>Thread-safety: a command object holds parsed options; use one instance per invocation, from
 * one thread.
 */
@Command(
        name = "init",
        mixinStandardHelpOptions = true,
        sortOptions = false,
        description = {
            "Marks a brand-new deployment, so that the first locks are granted at once instead of after one"
                    + " lease (the data-loss fence of a server without markers). Refuses if anything was ever"
                    + " written under the namespace. Run it once, on a server known to be new: a server that"
                    + " lost its data looks the same."
        },
        exitCodeListHeading = "%nExit codes:%n",
        exitCodeList = {
            "0:marked, or nothing to do on this backend",
            "1:refused (the namespace was used before) or the server could not be reached",
            "2:invalid options or URI"
        })
public final class InitCommand implements Callable<Integer> {

    @Spec
    private CommandSpec spec;

    @Mixin
    private ServerOptions server;

    /** Creates the command; picocli fills in its fields. */
    public InitCommand() {}

    /**
     * Marks the deployment, or refuses.
     *
     * <p>Blocking: until the server answered or the connect timeout passed. Thread-safety: one
     * invocation at a time. On failure: returns 1 after printing the reason; a refusal changes
     * nothing.
     *
     * @return the exit status
     * @throws CommandLine.ParameterException for a bad URI (exit status 2)
     */
    @Override
    public Integer call() {
        PrintWriter out = spec.commandLine().getOut();
        try (AdminConnection admin = server.open(spec)) {
            out.println(admin.inspector().initialize());
            out.flush();
            return 0;
        } catch (IllegalStateException e) {
            spec.commandLine().getErr().println("dlock init: " + e.getMessage());
            spec.commandLine().getErr().flush();
            return 1;
        } catch (DistributedLockException e) {
            return Admin.failed(spec, e);
        }
    }
}

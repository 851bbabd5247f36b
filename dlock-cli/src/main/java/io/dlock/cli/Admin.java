package io.dlock.cli;

import io.dlock.DistributedLockException;
import io.dlock.cli.internal.admin.AdminConnection;
import java.time.Duration;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;

/** What {@code inspect}, {@code release} and {@code watch} share: opening the server, reporting failures. */
final class Admin {
    private Admin() {}

    /** Opens {@code uri}; a bad URI is a usage error (exit 2). */
    static AdminConnection open(CommandSpec spec, String uri, Duration connectTimeout) {
        try {
            return AdminConnection.open(uri, connectTimeout);
        } catch (IllegalArgumentException e) {
            throw new CommandLine.ParameterException(spec.commandLine(), e.getMessage(), e, null, uri);
        }
    }

    /** Prints a server failure and returns exit status 1. */
    static int failed(CommandSpec spec, DistributedLockException e) {
        spec.commandLine()
                .getErr()
                .println("dlock " + spec.name() + ": " + e.getMessage() + " (nothing was changed by this command)");
        spec.commandLine().getErr().flush();
        return 1;
    }
}

package io.dlock.cli;

import io.dlock.DistributedLockException;
import io.dlock.cli.internal.admin.AdminConnection;
import io.dlock.spi.DataLossFence;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
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

    /**
     * One line per data-loss fence in force (a Redis Cluster's slots summarised after the first three),
     * each saying until when nothing is granted there and why.
     */
    static List<String> fenceLines(List<DataLossFence> fences) {
        List<String> lines = new ArrayList<>();
        for (DataLossFence f : fences.subList(0, Math.min(3, fences.size()))) {
            lines.add("fenced: " + f.describe());
        }
        if (fences.size() > 3) {
            Instant last = fences.stream()
                    .map(DataLossFence::until)
                    .max(Instant::compareTo)
                    .orElseThrow();
            lines.add("fenced: … and " + (fences.size() - 3) + " more, the last until " + last);
        }
        return lines;
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

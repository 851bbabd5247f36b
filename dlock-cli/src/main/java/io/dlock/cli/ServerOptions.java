package io.dlock.cli;

import io.dlock.cli.internal.DurationConverter;
import io.dlock.cli.internal.admin.AdminConnection;
import java.time.Duration;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * What {@code inspect}, {@code release}, {@code watch} and {@code init} take to reach a server: its
 * URI (the first parameter) and {@code --connect-timeout}. A picocli mixin.
 *
 * <p>Thread-safety: holds parsed options; one instance per invocation, from one thread.
 */
final class ServerOptions {
    @Parameters(index = "0", paramLabel = "URI", description = "The lock server, e.g. redis://host:6379.")
    private String uri;

    @Option(
            names = "--connect-timeout",
            paramLabel = "DURATION",
            defaultValue = "5s",
            converter = DurationConverter.class,
            description = "How long to try to reach the server (default: ${DEFAULT-VALUE}).")
    private Duration connectTimeout;

    /** Opens the server; a bad URI is a usage error of {@code spec}'s command (exit 2). */
    AdminConnection open(CommandSpec spec) {
        return Admin.open(spec, uri, connectTimeout);
    }
}

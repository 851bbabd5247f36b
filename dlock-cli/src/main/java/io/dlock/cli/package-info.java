/**
 * The {@code dlock} command line: {@link io.dlock.cli.Main} and its subcommands, such as {@link
 * io.dlock.cli.DemoCommand} ({@code dlock demo}, the oversell scenario).
 *
 * <p>User-facing output goes to standard output; diagnostics are logged through SLF4J.
 */
@NullMarked
package io.dlock.cli;

import org.jspecify.annotations.NullMarked;

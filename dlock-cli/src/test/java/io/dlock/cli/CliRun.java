package io.dlock.cli;

import java.io.PrintWriter;
import java.io.StringWriter;

/** Runs one {@code dlock} command in this JVM and keeps what it printed: the admin commands' ITs share it. */
final class CliRun {
    final int status;
    final String out;
    final String err;

    private CliRun(int status, String out, String err) {
        this.status = status;
        this.out = out;
        this.err = err;
    }

    static CliRun of(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        picocli.CommandLine cl = Main.commandLine();
        cl.setOut(new PrintWriter(out, true));
        cl.setErr(new PrintWriter(err, true));
        int status = cl.execute(args);
        return new CliRun(status, out.toString(), err.toString());
    }
}

package io.dlock.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.dlock.testkit.PostgresServer;
import io.dlock.testkit.RedisServer;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * Runs {@code dlock demo} in this JVM, as a newcomer would from the jar: the embedded ZooKeeper and
 * the stock server run here, the workers in child JVMs on the test classpath.
 */
class DemoIT {

    /** A row of the summary table: round | mode | stock | sold | oversold | stale | notes. */
    private static final Pattern ROW = Pattern.compile(
            "^\\s*(\\d+) \\| ([^|]+?)\\s*\\|\\s*(\\d+) \\|\\s*(\\d+) \\|\\s*(\\d+) \\|\\s*(\\d+) \\| (.*)$");

    private record Row(int round, String mode, int stock, int sold, int oversold, int stale, String notes) {}

    @Test
    @Timeout(value = 3, unit = TimeUnit.MINUTES)
    void demo_defaults_oversellsWithoutLockOnlyAndRejectsTheStaleWrite() {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine commandLine = Main.commandLine();
        commandLine.setOut(new PrintWriter(out, true));
        commandLine.setErr(new PrintWriter(err, true));

        int status = commandLine.execute("demo");

        String output = out + "\n--- stderr ---\n" + err;
        assertThat(status).as(output).isZero();
        List<Row> rows = rows(out.toString());
        assertThat(rows).as(output).extracting(Row::round).containsExactly(1, 2, 3, 4);
        assertThat(rows.get(0).oversold()).as(output).isPositive();
        assertThat(rows.get(0).sold()).as(output).isEqualTo(20 + rows.get(0).oversold());
        for (Row row : rows.subList(1, 4)) {
            assertThat(row.oversold()).as(output).isZero();
            assertThat(row.sold()).as(output).isEqualTo(20);
        }
        assertThat(rows.get(1).notes()).as(output).startsWith("tokens strictly increased over 20 writes");
        assertThat(rows.get(2).notes()).as(output).contains("after kill -9");
        assertThat(rows.get(3).stale()).as(output).isEqualTo(1);
        assertThat(rows.get(3).notes()).as(output).startsWith("paused holder's write rejected: token");
        assertThat(out.toString()).as(output).contains("PASS:");
    }

    @Test
    @Timeout(value = 4, unit = TimeUnit.MINUTES)
    void demo_onRedisByUri_passesTheFourRoundsAndWritesItsReport(@TempDir Path dir) {
        try (RedisServer redis = RedisServer.start()) {
            String uri = redis.uri("demo");
            Path report = dir.resolve("demo-redis.html");
            StringWriter out = new StringWriter();
            StringWriter err = new StringWriter();
            CommandLine commandLine = Main.commandLine();
            commandLine.setOut(new PrintWriter(out, true));
            commandLine.setErr(new PrintWriter(err, true));

            int status = commandLine.execute("demo", "--uri", uri, "--report", report.toString());

            String output = out + "\n--- stderr ---\n" + err;
            assertThat(status).as(output).isZero();
            assertThat(out.toString())
                    .as(output)
                    .contains("Lock server redis://")
                    .contains("lease time 3s")
                    .contains("PASS:")
                    .contains("report: " + report.toAbsolutePath());
            List<Row> rows = rows(out.toString());
            assertThat(rows).as(output).extracting(Row::round).containsExactly(1, 2, 3, 4);
            assertThat(rows.get(0).oversold()).as(output).isPositive();
            for (Row row : rows.subList(1, 4)) {
                assertThat(row.oversold()).as(output).isZero();
                assertThat(row.sold()).as(output).isEqualTo(20);
            }
            assertThat(rows.get(3).stale()).as(output).isEqualTo(1);
            assertThat(report).content().contains("Lock server: redis://").contains("<svg class=\"timeline\"");
        }
    }

    @Test
    @Timeout(value = 4, unit = TimeUnit.MINUTES)
    void demo_onPostgresByUri_sameFourRoundsAndNoPasswordShown() {
        try (PostgresServer postgres = PostgresServer.start()) {
            String uri = postgres.jdbcUrl() + "?user=" + PostgresServer.USER + "&password=" + PostgresServer.PASSWORD
                    + "&dlockTable=demo_locks&createTable=true";
            StringWriter out = new StringWriter();
            StringWriter err = new StringWriter();
            CommandLine commandLine = Main.commandLine();
            commandLine.setOut(new PrintWriter(out, true));
            commandLine.setErr(new PrintWriter(err, true));

            int status = commandLine.execute("demo", "--uri", uri);

            String output = out + "\n--- stderr ---\n" + err;
            assertThat(status).as(output).isZero();
            assertThat(out.toString())
                    .as(output)
                    .contains("Lock server " + postgres.jdbcUrl())
                    .contains("lease time 3s")
                    .doesNotContain(PostgresServer.PASSWORD)
                    .doesNotContain("ZooKeeper");
            List<Row> rows = rows(out.toString());
            assertThat(rows).as(output).extracting(Row::round).containsExactly(1, 2, 3, 4);
            assertThat(rows.get(0).oversold()).as(output).isPositive();
            for (Row row : rows.subList(1, 4)) {
                assertThat(row.oversold()).as(output).isZero();
                assertThat(row.sold()).as(output).isEqualTo(20);
            }
            assertThat(rows.get(1).notes()).as(output).startsWith("tokens strictly increased over 20 writes");
            assertThat(rows.get(2).notes()).as(output).contains("after kill -9 (lease 3s)");
            assertThat(rows.get(3).stale()).as(output).isEqualTo(1);
            assertThat(rows.get(3).notes()).as(output).startsWith("paused holder's write rejected: token");
        }
    }

    @Test
    void demo_blankUri_refusedAsBadOption() {
        CommandLine commandLine = Main.commandLine();
        StringWriter err = new StringWriter();
        commandLine.setErr(new PrintWriter(err, true));
        assertThat(commandLine.execute("demo", "--uri", " ")).isEqualTo(2);
        assertThat(err.toString()).contains("--uri").contains("blank");
    }

    private static List<Row> rows(String output) {
        List<Row> rows = new ArrayList<>();
        for (String line : output.lines().toList()) {
            Matcher m = ROW.matcher(line);
            if (m.matches()) {
                rows.add(new Row(
                        Integer.parseInt(m.group(1)),
                        m.group(2),
                        Integer.parseInt(m.group(3)),
                        Integer.parseInt(m.group(4)),
                        Integer.parseInt(m.group(5)),
                        Integer.parseInt(m.group(6)),
                        m.group(7)));
            }
        }
        return rows;
    }
}

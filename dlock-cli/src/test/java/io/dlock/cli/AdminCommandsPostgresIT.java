package io.dlock.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.LockLostException;
import io.dlock.testkit.PostgresServer;
import io.dlock.testkit.Timing;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** {@code dlock inspect}, {@code release --force} and {@code watch} on a {@code jdbc:postgresql:} URI, end to end. */
class AdminCommandsPostgresIT {
    private static PostgresServer postgres;
    private static String uri;

    private final List<AutoCloseable> opened = new ArrayList<>();

    @BeforeAll
    static void start() {
        postgres = PostgresServer.start();
        uri = postgres.jdbcUrl() + "?user=" + PostgresServer.USER + "&password=" + PostgresServer.PASSWORD
                + "&dlockTable=cli_locks&createTable=true";
    }

    @AfterAll
    static void stop() {
        postgres.close();
    }

    @AfterEach
    void closeAll() throws Exception {
        for (int i = opened.size() - 1; i >= 0; i--) {
            opened.get(i).close();
        }
        assertThat(run("inspect", uri).out).contains("no lock is held");
    }

    private LockClient client(String options) {
        LockClient c = LockClient.connect(uri + "&" + options);
        opened.add(c);
        return c;
    }

    private static CliRun run(String... args) {
        return CliRun.of(args);
    }

    private static Duration scaled(long seconds) {
        return Timing.scale(Duration.ofSeconds(seconds));
    }

    @Test
    void inspectReleaseAndWatch_onPostgres() throws Exception {
        List<LockLostException> lost = new CopyOnWriteArrayList<>();
        StringWriter watchOut = new StringWriter();
        StringWriter watchErr = new StringWriter();
        CompletableFuture<Integer> watching = CompletableFuture.supplyAsync(() -> {
            CommandLine cl = Main.commandLine();
            cl.setOut(new PrintWriter(watchOut, true));
            cl.setErr(new PrintWriter(watchErr, true));
            return cl.execute("watch", uri, "stuck", "--events", "5", "--duration", "60s", "--poll", "20ms");
        });
        await().atMost(scaled(10)).until(() -> watchOut.toString().contains("free"));
        Lease stuck = client("leaseTime=3s").lock("stuck").acquire().onLost(lost::add);
        CompletableFuture<Lease> waiter = client("leaseTime=3s").lock("stuck").acquireAsync(scaled(60));
        await().atMost(scaled(10)).until(() -> run("inspect", uri, "stu").out.contains("waiting #1"));

        CliRun table = run("inspect", uri);
        CliRun json = run("inspect", uri, "stuck", "--json");
        CliRun release = run("release", "--force", uri, "stuck", "--yes");

        assertThat(table.status).as(table.err).isZero();
        assertThat(table.out.lines().toList().get(1))
                .startsWith("stuck")
                .contains("held", "exclusive", Long.toString(stuck.fencingToken()), "yes");
        assertThat(json.out)
                .contains("\"pid\":" + ProcessHandle.current().pid(), "\"connected\":true", "\"waiters\":[{");
        assertThat(release.status).as(release.err).isZero();
        assertThat(release.out)
                .contains(
                        "will remove 1 grant(s) of lock 'stuck' on jdbc",
                        "the holder is told at once (within about 1 s)",
                        "removed stuck#");
        Lease next = waiter.get(scaled(10).toMillis(), TimeUnit.MILLISECONDS);
        assertThat(next.fencingToken()).isGreaterThan(stuck.fencingToken());
        await().atMost(scaled(10)).until(() -> lost.size() == 1);
        assertThat(stuck.isValid()).isFalse();
        next.close();
        stuck.close();

        int status = watching.get(scaled(60).toMillis(), TimeUnit.MILLISECONDS);
        assertThat(status).as(watchErr.toString()).isZero();
        List<String> events =
                watchOut.toString().lines().skip(1).map(l -> l.substring(14)).toList();
        assertThat(events).hasSize(5);
        assertThat(events.get(0)).startsWith("free");
        assertThat(events.get(1)).startsWith("granted").contains("token=" + stuck.fencingToken());
        assertThat(events.get(2)).startsWith("queued #1");
        assertThat(String.join("\n", events.subList(3, 5))).contains("token=" + next.fencingToken());
    }
}

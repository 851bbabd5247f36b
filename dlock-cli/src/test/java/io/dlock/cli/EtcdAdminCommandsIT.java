package io.dlock.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.LockLostException;
import io.dlock.testkit.EtcdServer;
import io.dlock.testkit.Timing;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import picocli.CommandLine;

/** {@code dlock inspect}, {@code release --force} and {@code watch}, end to end on a real etcd. */
class EtcdAdminCommandsIT {
    private static EtcdServer etcd;

    private final List<AutoCloseable> opened = new ArrayList<>();
    private String uri;

    @BeforeAll
    static void start() {
        etcd = EtcdServer.start();
    }

    @AfterAll
    static void stop() {
        etcd.close();
    }

    @BeforeEach
    void prefix(TestInfo info) throws Exception {
        String namespace = "cli-" + info.getTestMethod().orElseThrow().getName();
        uri = etcd.uri(namespace);
        // The namespace's epoch marker, as its first grant leaves it once its data-loss fence (a lease
        // time) is over: these tests are about the commands, not about that wait.
        etcd.markFreshNamespace(namespace);
    }

    @AfterEach
    void closeAll() throws Exception {
        for (int i = opened.size() - 1; i >= 0; i--) {
            opened.get(i).close();
        }
        assertThat(run("inspect", uri).out).contains("no lock is held");
    }

    private LockClient client(String options) {
        LockClient c = LockClient.connect(uri + "?" + options);
        opened.add(c);
        return c;
    }

    private static CliRun run(String... args) {
        return CliRun.of(args);
    }

    private static Duration scaled(long seconds) {
        return Timing.scale(Duration.ofSeconds(seconds));
    }

    private void awaitWaiting(String lock) {
        await().atMost(scaled(10)).until(() -> run("inspect", uri, lock).out.contains("waiting #1"));
    }

    @Test
    void inspect_heldWithWaiter_tableAndJsonShowHolderHostPidTokenAndQueue() throws Exception {
        Lease held = client("leaseTime=20s").lock("orders").acquire();
        CompletableFuture<Lease> waiter = client("leaseTime=20s").lock("orders").acquireAsync(scaled(30));
        awaitWaiting("orders");

        CliRun table = run("inspect", uri);
        CliRun json = run("inspect", uri, "ord", "--json");

        assertThat(table.status).as(table.err).isZero();
        List<String> lines = table.out.lines().toList();
        assertThat(lines.get(1))
                .startsWith("orders")
                .contains(
                        "held",
                        "exclusive",
                        Long.toString(held.fencingToken()),
                        Long.toString(ProcessHandle.current().pid()),
                        InetAddress.getLocalHost().getHostName());
        assertThat(lines.get(2)).startsWith("orders").contains("waiting #1");
        assertThat(lines).hasSize(3);
        assertThat(json.status).isZero();
        assertThat(json.out.trim())
                .startsWith("[{\"name\":\"orders\",\"kind\":\"exclusive\"")
                .contains(
                        "\"token\":" + held.fencingToken(),
                        "\"pid\":" + ProcessHandle.current().pid(),
                        "\"connected\":true",
                        "\"waiters\":[{");
        assertThat(run("inspect", uri, "zzz").out).contains("no lock is held or waited for under 'zzz' (etcd)");
        held.close();
        waiter.get().close();
    }

    @Test
    void release_liveHolderWithYes_firesOnLostAndTheWaiterGetsAHigherToken() throws Exception {
        List<LockLostException> lost = new CopyOnWriteArrayList<>();
        Lease stuck = client("leaseTime=3s").lock("stuck").acquire().onLost(lost::add);
        CompletableFuture<Lease> waiter = client("leaseTime=3s").lock("stuck").acquireAsync(scaled(60));
        awaitWaiting("stuck");

        CliRun r = run("release", "--force", uri, "stuck", "--yes");

        assertThat(r.status).as(r.err).isZero();
        assertThat(r.out)
                .contains(
                        "will remove 1 grant(s) of lock 'stuck' on etcd",
                        "the holder is told at once (within about 1 s)",
                        "removed ")
                .doesNotContain("warning");
        Lease next = waiter.get(scaled(10).toMillis(), TimeUnit.MILLISECONDS);
        assertThat(next.fencingToken()).isGreaterThan(stuck.fencingToken());
        await().atMost(scaled(10)).until(() -> lost.size() == 1);
        assertThat(stuck.isValid()).isFalse();
        stuck.close();
        next.close();
    }

    @Test
    void watch_scriptedSequence_printsEachEventInOrder_fromNotificationsNotPolls() throws Exception {
        LockClient a = client("leaseTime=20s");
        LockClient b = client("leaseTime=20s");
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CompletableFuture<Integer> watching = CompletableFuture.supplyAsync(() -> {
            CommandLine cl = Main.commandLine();
            cl.setOut(new PrintWriter(out, true));
            cl.setErr(new PrintWriter(err, true));
            return cl.execute("watch", uri, "seq", "--events", "6", "--duration", "60s", "--poll", "1h");
        });
        await().atMost(scaled(10)).until(() -> out.toString().contains("free"));
        Lease first = a.lock("seq").acquire();
        await().atMost(scaled(10)).until(() -> out.toString().contains("granted"));
        CompletableFuture<Lease> second = b.lock("seq").acquireAsync(scaled(30));
        awaitWaiting("seq");
        await().atMost(scaled(10)).until(() -> out.toString().contains("queued"));
        first.close();
        Lease granted = second.get(scaled(10).toMillis(), TimeUnit.MILLISECONDS);
        await().atMost(scaled(10)).until(() -> !run("inspect", uri, "seq").out.contains("waiting"));
        granted.close();
        int status = watching.get(scaled(60).toMillis(), TimeUnit.MILLISECONDS);

        assertThat(status).as(err.toString()).isZero();
        List<String> events =
                out.toString().lines().skip(1).map(l -> l.substring(14)).toList();
        assertThat(events).hasSize(6);
        assertThat(events.get(0)).startsWith("free");
        assertThat(events.get(1)).startsWith("granted  exclusive exclusive").contains("token=" + first.fencingToken());
        assertThat(events.get(2)).startsWith("queued #1  exclusive");
        assertThat(events.get(3)).startsWith("released").contains("token=" + first.fencingToken());
        assertThat(events.get(4)).startsWith("granted").contains("token=" + granted.fencingToken());
        assertThat(events.get(5)).startsWith("released").contains("token=" + granted.fencingToken());
    }

    @Test
    void watch_grantHeldForSeveralLeaseTimesThenReleased_isReportedReleasedNotExpired() throws Exception {
        // etcd reports a lease's time left in whole seconds, rounded down: a 2 s lease between two
        // keep-alives can read 1 s or 0 s, which a refresh delayed by a busy machine then outlives.
        LockClient a = client("leaseTime=3s");
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CompletableFuture<Integer> watching = CompletableFuture.supplyAsync(() -> {
            CommandLine cl = Main.commandLine();
            cl.setOut(new PrintWriter(out, true));
            cl.setErr(new PrintWriter(err, true));
            return cl.execute("watch", uri, "long", "--events", "3", "--duration", "60s", "--poll", "1h");
        });
        await().atMost(scaled(10)).until(() -> out.toString().contains("free"));
        Lease held = a.lock("long").acquire();
        await().atMost(scaled(10)).until(() -> out.toString().contains("granted"));
        // Held through several renewals: the watch sees no change meanwhile, only its lease refreshes.
        Thread.sleep(Duration.ofSeconds(7).toMillis());
        assertThat(held.isValid()).isTrue();
        held.close();
        int status = watching.get(scaled(60).toMillis(), TimeUnit.MILLISECONDS);

        assertThat(status).as(err.toString()).isZero();
        List<String> events =
                out.toString().lines().skip(1).map(l -> l.substring(14)).toList();
        assertThat(events).hasSize(3);
        assertThat(events.get(2)).startsWith("released").contains("token=" + held.fencingToken());
    }
}

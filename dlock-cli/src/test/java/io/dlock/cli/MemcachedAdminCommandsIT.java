package io.dlock.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.LockLostException;
import io.dlock.testkit.MemcachedServer;
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

/**
 * {@code dlock inspect}, {@code release --force} and {@code watch}, end to end on a real memcached
 * (keys listed with the LRU crawler; one waiter per lock, since memcached keeps no queue order).
 */
class MemcachedAdminCommandsIT {
    private static MemcachedServer memcached;

    private final List<AutoCloseable> opened = new ArrayList<>();
    private String uri;

    @BeforeAll
    static void start() {
        memcached = MemcachedServer.start();
        // A fresh server has no boot marker: the first client quarantines it for its lease (1 s here).
        try (LockClient first = LockClient.connect("memcached://" + memcached.connectString() + "?leaseTime=1s")) {
            first.capabilities();
        }
        await().atMost(scaled(10)).until(() -> {
            try (LockClient c = LockClient.connect("memcached://" + memcached.connectString() + "?leaseTime=1s")) {
                return c.lock("settled")
                        .tryAcquire(Duration.ZERO)
                        .map(l -> {
                            l.close();
                            return true;
                        })
                        .orElse(false);
            }
        });
    }

    @AfterAll
    static void stop() {
        memcached.close();
    }

    @BeforeEach
    void prefix(TestInfo info) {
        uri = memcached.uri("cli"
                + Integer.toHexString(
                        info.getTestMethod().orElseThrow().getName().hashCode()));
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

    /** Until the lock has a waiter and its holder's token is recorded (a moment after the grant). */
    private void awaitWaiting(String lock, long token) {
        await().atMost(scaled(10)).until(() -> {
            String out = run("inspect", uri, lock).out;
            return out.contains("waiting #1") && out.contains(Long.toString(token));
        });
    }

    @Test
    void inspect_heldWithWaiter_tableAndJsonShowHolderHostPidTokenAndWaiter() throws Exception {
        Lease held = client("leaseTime=20s").lock("orders").acquire();
        CompletableFuture<Lease> waiter = client("leaseTime=20s").lock("orders").acquireAsync(scaled(30));
        awaitWaiting("orders", held.fencingToken());

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
                        "\"waiters\":[{");
        assertThat(run("inspect", uri, "zzz").out).contains("no lock is held or waited for under 'zzz' (memcached)");
        held.close();
        waiter.get().close();
    }

    @Test
    void release_liveHolderWithYes_firesOnLostAtItsRenewalAndTheWaiterGetsAHigherToken() throws Exception {
        List<LockLostException> lost = new CopyOnWriteArrayList<>();
        Lease stuck = client("leaseTime=3s").lock("stuck").acquire().onLost(lost::add);
        CompletableFuture<Lease> waiter = client("leaseTime=3s").lock("stuck").acquireAsync(scaled(60));
        awaitWaiting("stuck", stuck.fencingToken());

        CliRun r = run("release", "--force", uri, "stuck", "--yes");

        assertThat(r.status).as(r.err).isZero();
        assertThat(r.out)
                .contains(
                        "will remove 1 grant(s) of lock 'stuck' on memcached",
                        "warning: on memcached the removed holder may still consider its lease valid for up to ",
                        "(until its next renewal, every third of its lease)",
                        "removed ");
        Lease next = waiter.get(scaled(10).toMillis(), TimeUnit.MILLISECONDS);
        assertThat(next.fencingToken()).isGreaterThan(stuck.fencingToken());
        // The holder hears of it at its next renewal (a third of its 3 s lease).
        await().atMost(scaled(10)).until(() -> lost.size() == 1);
        assertThat(stuck.isValid()).isFalse();
        stuck.close();
        next.close();
    }

    @Test
    void release_badInput_refusesAndChangesNothing() throws Exception {
        Lease held = client("leaseTime=20s").lock("kept").acquire();

        CliRun noName = run("release", "--force", uri);
        CliRun other = run("release", "--force", uri, "other", "--yes");

        assertThat(noName.status).isNotZero();
        assertThat(other.out).doesNotContain("removed ");
        assertThat(held.isValid()).isTrue();
        await().atMost(scaled(10))
                .until(() -> run("inspect", uri, "kept").out.contains(Long.toString(held.fencingToken())));
        held.close();
    }

    @Test
    void watch_scriptedSequence_printsEachEventInOrder() throws Exception {
        LockClient a = client("leaseTime=20s");
        LockClient b = client("leaseTime=20s");
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CompletableFuture<Integer> watching = CompletableFuture.supplyAsync(() -> {
            CommandLine cl = Main.commandLine();
            cl.setOut(new PrintWriter(out, true));
            cl.setErr(new PrintWriter(err, true));
            return cl.execute("watch", uri, "seq", "--events", "5", "--duration", "60s", "--poll", "20ms");
        });
        await().atMost(scaled(10)).until(() -> out.toString().contains("free"));
        Lease first = a.lock("seq").acquire();
        await().atMost(scaled(10)).until(() -> out.toString().contains("granted"));
        CompletableFuture<Lease> second = b.lock("seq").acquireAsync(scaled(30));
        await().atMost(scaled(10)).until(() -> out.toString().contains("queued"));
        first.close();
        Lease granted = second.get(scaled(10).toMillis(), TimeUnit.MILLISECONDS);
        await().atMost(scaled(10)).until(() -> out.toString().contains("token=" + granted.fencingToken()));
        granted.close();
        int status = watching.get(scaled(60).toMillis(), TimeUnit.MILLISECONDS);

        assertThat(status).as(err.toString()).isZero();
        List<String> events =
                out.toString().lines().skip(1).map(l -> l.substring(14)).toList();
        assertThat(events).hasSize(5);
        assertThat(events.get(0)).startsWith("free");
        assertThat(events.get(1)).startsWith("granted").contains("token=" + first.fencingToken());
        assertThat(events.get(2)).startsWith("queued #1");
        // Polled: the release and the next grant may be one step or two (released, then granted).
        assertThat(String.join("\n", events.subList(3, 5))).contains("token=" + granted.fencingToken());
    }
}

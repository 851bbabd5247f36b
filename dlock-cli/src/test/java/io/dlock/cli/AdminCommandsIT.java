package io.dlock.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.LockLostException;
import io.dlock.testkit.ChildJvm;
import io.dlock.testkit.FreePorts;
import io.dlock.testkit.LockWorker;
import io.dlock.testkit.RedisServer;
import io.dlock.testkit.Timing;
import java.io.ByteArrayInputStream;
import java.io.InputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import picocli.CommandLine;

/** {@code dlock inspect}, {@code release --force} and {@code watch}, end to end on a real redis-server. */
class AdminCommandsIT {
    private static RedisServer redis;

    private final List<AutoCloseable> opened = new ArrayList<>();
    private String uri;
    private String prefix;

    @BeforeAll
    static void start() {
        redis = RedisServer.start();
    }

    @AfterAll
    static void stop() {
        redis.close();
    }

    @BeforeEach
    void prefix(TestInfo info) {
        prefix = "cli-" + info.getTestMethod().orElseThrow().getName();
        redis.markFreshPrefix(prefix);
        uri = redis.uri(prefix);
    }

    @AfterEach
    void closeAll() throws Exception {
        for (int i = opened.size() - 1; i >= 0; i--) {
            opened.get(i).close();
        }
        // Nothing the commands or the clients made is left but the epoch marker.
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

    private void awaitWaiting(String lock) {
        await().atMost(scaled(10)).until(() -> run("inspect", uri, lock).out.contains("waiting #1"));
    }

    @Test
    void inspect_heldWithWaiter_tableAndJsonShowHolderTokenAndQueue() throws Exception {
        Lease held = client("leaseTime=20s").lock("orders").acquire();
        CompletableFuture<Lease> waiter = client("leaseTime=20s").lock("orders").acquireAsync(scaled(30));
        awaitWaiting("orders");

        CliRun table = run("inspect", uri);
        CliRun json = run("inspect", uri, "ord", "--json");

        assertThat(table.status).isZero();
        List<String> lines = table.out.lines().toList();
        assertThat(lines.get(0)).startsWith("LOCK").contains("TOKEN", "LEASE LEFT");
        assertThat(lines.get(1))
                .startsWith("orders")
                .contains("lock", "held", "exclusive", Long.toString(held.fencingToken()), "yes");
        assertThat(lines.get(2)).startsWith("orders").contains("waiting #1");
        assertThat(lines).hasSize(3);
        assertThat(json.status).isZero();
        assertThat(json.out.trim())
                .startsWith("[{\"name\":\"orders\",\"kind\":\"exclusive\"")
                .contains("\"token\":" + held.fencingToken(), "\"connected\":true", "\"waiters\":[{");
        assertThat(run("inspect", uri, "zzz").out).contains("no lock is held or waited for under 'zzz' (redis)");
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
                        "will remove 1 grant(s) of lock 'stuck' on redis",
                        "the holder is told at once (within about 1 s)",
                        "removed " + prefix + ":{stuck}:x#")
                .doesNotContain("warning");
        Lease next = waiter.get(scaled(10).toMillis(), TimeUnit.MILLISECONDS);
        assertThat(next.fencingToken()).isGreaterThan(stuck.fencingToken());
        await().atMost(scaled(10)).until(() -> lost.size() == 1);
        assertThat(stuck.isValid()).isFalse();
        stuck.close();
        next.close();
    }

    @Test
    void release_deadHolderByClientId_letsTheWaiterInBeforeTheLeaseEnds() throws Exception {
        ChildJvm child = ChildJvm.start(LockWorker.class, List.of("hold", uri + "&leaseTime=60s", "dead"));
        opened.add(child);
        long deadToken = Long.parseLong(child.awaitLine("HOLDING", scaled(30)).split(" ")[1]);
        child.kill();
        CompletableFuture<Lease> waiter = client("leaseTime=5s").lock("dead").acquireAsync(scaled(60));
        awaitWaiting("dead");
        String json = run("inspect", uri, "dead", "--json").out;
        Matcher m = Pattern.compile("\"clientId\":\"([^\"]+)\"").matcher(json);
        assertThat(m.find()).isTrue();
        await().atMost(scaled(10)).until(() -> run("inspect", uri, "dead").out.contains(" NO "));

        CliRun r = run("release", "--force", uri, "dead", "--holder", m.group(1), "--yes");

        assertThat(r.status).as(r.err).isZero();
        Lease next = waiter.get(scaled(10).toMillis(), TimeUnit.MILLISECONDS);
        assertThat(next.fencingToken()).isGreaterThan(deadToken);
        next.close();
    }

    @Test
    void release_answerNo_removesNothing() throws Exception {
        Lease held = client("leaseTime=20s").lock("kept").acquire();
        InputStream stdin = System.in;
        CliRun r;
        try {
            System.setIn(new ByteArrayInputStream("n\n".getBytes(StandardCharsets.UTF_8)));
            r = run("release", "--force", uri, "kept");
        } finally {
            System.setIn(stdin);
        }

        assertThat(r.status).isEqualTo(1);
        assertThat(r.out).contains("remove? [y/N]", "nothing removed");
        assertThat(run("inspect", uri, "kept").out).contains(Long.toString(held.fencingToken()));
        assertThat(held.isValid()).isTrue();
        held.close();
    }

    @Test
    void release_badInput_usageErrorAndNothingChanged() throws Exception {
        Lease held = client("leaseTime=20s").lock("kept").acquire();
        LockClient readers = client("leaseTime=20s");
        Lease r1 = readers.readWriteLock("shared").readLock().acquire();
        Lease r2 = client("leaseTime=20s").readWriteLock("shared").readLock().acquire();

        CliRun noName = run("release", "--force", uri);
        CliRun noForce = run("release", uri, "kept", "--yes");
        CliRun unknownHolder = run("release", "--force", uri, "kept", "--holder", "nobody", "--yes");
        CliRun twoHolders = run("release", "--force", uri, "shared", "--yes");
        CliRun badScheme = run("release", "--force", "nope://127.0.0.1:1", "kept", "--yes");
        CliRun noScheme = run("inspect", "localhost");
        CliRun unreachable = run(
                "release",
                "--force",
                "redis://127.0.0.1:" + FreePorts.loopback() + "?keyPrefix=" + prefix,
                "kept",
                "--yes",
                "--connect-timeout",
                "2s");
        CliRun notHeld = run("release", "--force", uri, "free", "--yes");

        assertThat(noName.status).isEqualTo(2);
        assertThat(noName.err).contains("Missing required parameter: 'NAME'");
        assertThat(noForce.status).isEqualTo(2);
        assertThat(noForce.err).contains("add --force to mean it");
        assertThat(unknownHolder.status).isEqualTo(2);
        assertThat(unknownHolder.err).contains("no holder 'nobody' of lock 'kept'");
        assertThat(twoHolders.status).isEqualTo(2);
        assertThat(twoHolders.err).contains("lock 'shared' has 2 holders; name the one to remove with --holder");
        assertThat(badScheme.status).isEqualTo(2);
        assertThat(badScheme.err).contains("no dlock backend for 'nope:'");
        assertThat(noScheme.status).isEqualTo(2);
        assertThat(noScheme.err).contains("has no scheme");
        assertThat(unreachable.status).isEqualTo(1);
        assertThat(unreachable.err).contains("cannot connect", "nothing was changed");
        assertThat(notHeld.status).isZero();
        assertThat(notHeld.out).contains("lock 'free' is not held on redis: nothing to release");

        String after = run("inspect", uri).out;
        assertThat(after)
                .contains(
                        Long.toString(held.fencingToken()),
                        Long.toString(r1.fencingToken()),
                        Long.toString(r2.fencingToken()));
        assertThat(held.isValid() && r1.isValid() && r2.isValid()).isTrue();
        held.close();
        r1.close();
        r2.close();
    }

    @Test
    void init_newPrefix_inspectAndWatchShowTheFenceUntilMarked_andAUsedPrefixIsRefused() {
        String fresh = prefix + "-new"; // never used, never marked: a fence would start at the first acquire
        String freshUri = redis.uri(fresh);
        CliRun inspect = run("inspect", freshUri);
        assertThat(inspect.status).isZero();
        assertThat(inspect.out)
                .contains("fenced: data-loss fence on key prefix '" + fresh + "' until ")
                .contains("dlock init")
                .contains("no lock is held");
        CliRun json = run("inspect", freshUri, "--json");
        assertThat(json.out.strip()).isEqualTo("[]"); // stdout stays one JSON array
        assertThat(json.err).contains("fenced: data-loss fence");
        CliRun watch = run("watch", freshUri, "orders", "--duration", "1s");
        assertThat(watch.out).contains("fenced: data-loss fence on key prefix '" + fresh + "'");

        CliRun init = run("init", freshUri);
        assertThat(init.status).as(init.err).isZero();
        assertThat(init.out).contains("marked key prefix '" + fresh + "'");
        assertThat(run("inspect", freshUri).out).doesNotContain("fenced").contains("no lock is held");
        try (LockClient c = LockClient.connect(freshUri)) {
            c.lock("first").tryAcquire(Duration.ZERO).orElseThrow().close(); // at once: no fence
        } catch (InterruptedException e) {
            throw new AssertionError(e);
        }

        CliRun again = run("init", freshUri);
        assertThat(again.status).isEqualTo(1);
        assertThat(again.err).contains("was used before").contains("not marked");
        CliRun zk = run("init", "zookeeper://127.0.0.1:" + FreePorts.loopback() + "/x", "--connect-timeout", "1s");
        assertThat(zk.status).as("nothing listens there").isEqualTo(1);
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
            return cl.execute("watch", uri, "seq", "--events", "6", "--duration", "60s", "--poll", "20ms");
        });
        await().atMost(scaled(10)).until(() -> out.toString().contains("free"));
        Lease first = a.lock("seq").acquire();
        CompletableFuture<Lease> second = b.lock("seq").acquireAsync(scaled(30));
        awaitWaiting("seq");
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
    void inspectAndWatch_election_showLeaderTermCandidatesAndSuccession() throws Exception {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CompletableFuture<Integer> watching = CompletableFuture.supplyAsync(() -> {
            CommandLine cl = Main.commandLine();
            cl.setOut(new PrintWriter(out, true));
            cl.setErr(new PrintWriter(err, true));
            return cl.execute("watch", uri, "election:jobs", "--events", "4", "--duration", "60s", "--poll", "20ms");
        });
        await().atMost(scaled(10)).until(() -> out.toString().contains("free"));
        io.dlock.LeaderElection a =
                client("leaseTime=20s").leaderElection("jobs").start();
        Lease first = a.awaitLeadership(scaled(10)).orElseThrow();
        io.dlock.LeaderElection b =
                client("leaseTime=20s").leaderElection("jobs").start();
        await().atMost(scaled(10))
                .until(() -> run("inspect", uri, "election:").out.contains("candidate #1"));

        CliRun table = run("inspect", uri, "election:");
        List<String> lines = table.out.lines().toList();
        assertThat(lines).hasSize(3);
        assertThat(lines.get(1))
                .startsWith("election:jobs")
                .contains("election", "leader", Long.toString(first.fencingToken()));
        assertThat(lines.get(2)).startsWith("election:jobs").contains("candidate #1");
        assertThat(run("inspect", uri, "election:", "--json").out).contains("\"kind\":\"election\"");

        a.close();
        Lease second = b.awaitLeadership(scaled(10)).orElseThrow();
        int status = watching.get(scaled(60).toMillis(), TimeUnit.MILLISECONDS);
        assertThat(status).as(err.toString()).isZero();
        List<String> events =
                out.toString().lines().skip(1).map(l -> l.substring(14)).toList();
        assertThat(events.get(0)).startsWith("free");
        assertThat(events.get(1)).startsWith("elected  election").contains("token=" + first.fencingToken());
        assertThat(events.get(2)).startsWith("candidate joined #1  election");
        assertThat(events.get(3)).startsWith("term ended").contains("token=" + first.fencingToken());
        assertThat(second.fencingToken()).isGreaterThan(first.fencingToken());
        b.close();
    }
}

package io.dlock.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.LockOptions;
import io.dlock.spi.BackendUri;
import io.dlock.spi.EntrySnapshot;
import io.dlock.spi.LockBackend;
import io.dlock.spi.LockInspector;
import io.dlock.spi.LockKind;
import io.dlock.spi.LockMode;
import io.dlock.spi.LockSnapshot;
import io.dlock.testkit.ChildJvm;
import io.dlock.testkit.LockWorker;
import io.dlock.testkit.Timing;
import java.net.URI;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The operator view on a real ZooKeeper: inspect, forced release, watch. */
class ZooKeeperInspectIT extends ZooKeeperTestSupport {

    private static Duration scaled(long seconds) {
        return Timing.scale(Duration.ofSeconds(seconds));
    }

    private LockInspector inspector() {
        BackendUri parsed = BackendUri.parse(URI.create(uri("")), LockOptions.defaults(), java.util.Set.of());
        LockBackend backend = track(new ZooKeeperBackendProvider().open(parsed));
        return backend.inspector().orElseThrow();
    }

    private static LockSnapshot only(List<LockSnapshot> locks) {
        assertThat(locks).hasSize(1);
        return locks.get(0);
    }

    private static LockSnapshot awaitWaiters(LockInspector inspector, String name, int waiters) {
        return await().atMost(scaled(10))
                .until(
                        () -> inspector.inspect(name),
                        l -> l.size() == 1 && l.get(0).waiters().size() == waiters)
                .get(0);
    }

    @Test
    void inspect_exclusiveWithTwoWaiters_showsHolderTokenAndQueueInOrder() throws Exception {
        LockInspector inspector = inspector();
        assertThat(inspector.inspect("")).isEmpty();
        Lease held = client().lock("orders").acquire();
        CompletableFuture<Lease> second = client().lock("orders").acquireAsync(scaled(30));
        awaitWaiters(inspector, "orders", 1);
        CompletableFuture<Lease> third = client().lock("orders").acquireAsync(scaled(30));
        LockSnapshot s = awaitWaiters(inspector, "orders", 2);

        assertThat(s.kind()).isEqualTo(LockKind.EXCLUSIVE);
        EntrySnapshot holder = s.holders().get(0);
        assertThat(s.holders()).hasSize(1);
        assertThat(holder.leaseToken()).isEqualTo(held.fencingToken());
        assertThat(holder.since())
                .isBetween(Instant.now().minusSeconds(60), Instant.now().plusSeconds(1));
        assertThat(holder.leaseLeft()).isNull();
        String secondSession = s.waiters().get(0).clientId();
        String thirdSession = s.waiters().get(1).clientId();
        assertThat(List.of(holder.clientId(), secondSession, thirdSession)).doesNotHaveDuplicates();

        held.close();
        Lease b = second.get();
        LockSnapshot next = awaitWaiters(inspector, "orders", 1);
        assertThat(next.holders()).extracting(EntrySnapshot::clientId).containsExactly(secondSession);
        assertThat(next.holders().get(0).leaseToken()).isEqualTo(b.fencingToken());
        assertThat(next.waiters()).extracting(EntrySnapshot::clientId).containsExactly(thirdSession);
        b.close();
        third.get().close();
        await().atMost(scaled(10)).until(() -> inspector.inspect("").stream()
                .allMatch(l -> l.holders().isEmpty() && l.waiters().isEmpty()));
    }

    @Test
    void inspect_readWriteAndSemaphore_showKindModesPermitsAndQueue() throws Exception {
        LockInspector inspector = inspector();
        LockClient r1 = client();
        LockClient r2 = client();
        Lease read1 = r1.readWriteLock("catalog").readLock().acquire();
        Lease read2 = r2.readWriteLock("catalog").readLock().acquire();
        CompletableFuture<Lease> write =
                client().readWriteLock("catalog").writeLock().acquireAsync(scaled(30));
        Lease two = r1.semaphore("pool", 3).acquire(2);
        CompletableFuture<Lease> waiting = CompletableFuture.supplyAsync(() -> {
            try {
                return r2.semaphore("pool", 3).acquire(2);
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        await().atMost(scaled(10))
                .until(
                        () -> inspector.inspect(""),
                        l -> l.size() == 2
                                && l.stream().allMatch(s -> s.waiters().size() == 1));

        List<LockSnapshot> all = inspector.inspect("");
        LockSnapshot rw = all.get(0);
        assertThat(rw.name()).isEqualTo("catalog");
        assertThat(rw.kind()).isEqualTo(LockKind.READ_WRITE);
        assertThat(rw.holders()).extracting(EntrySnapshot::mode).containsExactly(LockMode.READ, LockMode.READ);
        assertThat(rw.holders())
                .extracting(EntrySnapshot::leaseToken)
                .containsExactly(read1.fencingToken(), read2.fencingToken());
        assertThat(rw.waiters()).extracting(EntrySnapshot::mode).containsExactly(LockMode.WRITE);
        LockSnapshot sem = all.get(1);
        assertThat(sem.kind()).isEqualTo(LockKind.SEMAPHORE);
        assertThat(sem.maxPermits()).isEqualTo(3);
        assertThat(sem.holders()).extracting(EntrySnapshot::permits).containsExactly(2);
        assertThat(sem.holders().get(0).leaseToken()).isEqualTo(two.fencingToken());
        assertThat(sem.waiters()).extracting(EntrySnapshot::permits).containsExactly(2);
        assertThat(inspector.inspect("cat")).extracting(LockSnapshot::name).containsExactly("catalog");

        read1.close();
        read2.close();
        write.get().close();
        two.close();
        waiting.get().close();
    }

    @Test
    void forceRelease_liveHolder_grantsTheWaiterAHigherToken_andSaysTheHolderIsNotTold() throws Exception {
        LockInspector inspector = inspector();
        Lease stuck = client().lock("stuck").acquire();
        CompletableFuture<Lease> waiter = client().lock("stuck").acquireAsync(scaled(60));
        LockSnapshot s = awaitWaiters(inspector, "stuck", 1);

        List<String> removed =
                inspector.forceRelease("stuck", List.of(s.holders().get(0).key()));

        assertThat(removed).containsExactly(s.holders().get(0).key());
        Lease next = waiter.get(scaled(10).toMillis(), TimeUnit.MILLISECONDS);
        assertThat(next.fencingToken()).isGreaterThan(stuck.fencingToken());
        assertThat(inspector.holderNoticesForcedRelease()).isFalse();
        assertThat(inspector.forceRelease("stuck", removed)).isEmpty();
        stuck.close();
        next.close();
    }

    @Test
    void forceRelease_deadHolder_grantsTheWaiterBeforeTheSessionEnds() throws Exception {
        LockInspector inspector = inspector();
        ChildJvm child = track(ChildJvm.start(LockWorker.class, List.of("hold", uri("sessionTimeout=60s"), "dead")));
        long deadToken = Long.parseLong(child.awaitLine("HOLDING", scaled(30)).split(" ")[1]);
        child.kill();
        CompletableFuture<Lease> waiter = client().lock("dead").acquireAsync(scaled(60));
        LockSnapshot s = awaitWaiters(inspector, "dead", 1);
        assertThat(s.holders().get(0).leaseToken()).isEqualTo(deadToken);

        assertThat(inspector.forceRelease("dead", List.of(s.holders().get(0).key())))
                .hasSize(1);

        Lease next = waiter.get(scaled(10).toMillis(), TimeUnit.MILLISECONDS);
        assertThat(next.fencingToken()).isGreaterThan(deadToken);
        next.close();
    }

    @Test
    void forceRelease_badInput_throwsAndChangesNothing() throws Exception {
        LockInspector inspector = inspector();
        Lease held = client().lock("kept").acquire();
        String key = only(inspector.inspect("kept")).holders().get(0).key();

        assertThatThrownBy(() -> inspector.forceRelease("", List.of(key)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("name");
        assertThatThrownBy(() -> inspector.forceRelease("other", List.of(key)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("no entry of lock 'other'");

        assertThat(only(inspector.inspect("kept")).holders())
                .extracting(EntrySnapshot::key)
                .containsExactly(key);
        held.close();
    }

    @Test
    void watch_scriptedSequence_reportsEachStateInOrder() throws Exception {
        LockInspector inspector = inspector();
        List<String> states = Collections.synchronizedList(new ArrayList<>());
        List<Throwable> errors = new CopyOnWriteArrayList<>();
        LockClient a = client();
        LockClient b = client();
        try (LockInspector.Watch watch =
                inspector.watch("seq", Duration.ofSeconds(30), l -> states.add(describe(l)), errors::add)) {
            await().atMost(scaled(10)).until(() -> states.contains(""));
            Lease first = a.lock("seq").acquire();
            String h1 = "H" + first.fencingToken();
            await().atMost(scaled(10)).until(() -> states.contains(h1));
            CompletableFuture<Lease> second = b.lock("seq").acquireAsync(scaled(30));
            await().atMost(scaled(10)).until(() -> states.contains(h1 + " W"));
            first.close();
            Lease granted = second.get();
            String h2 = "H" + granted.fencingToken();
            await().atMost(scaled(10)).until(() -> states.contains(h2));
            granted.close();
            await().atMost(scaled(10))
                    .until(() ->
                            states.size() > 1 && states.get(states.size() - 1).isEmpty());
            assertThat(states).containsExactly("", h1, h1 + " W", h2, "");
        }
        assertThat(errors).isEmpty();
    }

    private static String describe(List<LockSnapshot> locks) {
        StringBuilder b = new StringBuilder();
        for (LockSnapshot l : locks) {
            l.holders().forEach(e -> b.append("H").append(e.leaseToken()));
            l.waiters().forEach(e -> b.append(" W"));
        }
        return b.toString();
    }
}

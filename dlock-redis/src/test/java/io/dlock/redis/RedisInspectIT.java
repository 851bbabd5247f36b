package io.dlock.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.LockLostException;
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
import java.net.URI;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/** The operator view on a real redis-server: inspect, forced release, watch. */
class RedisInspectIT extends RedisTestSupport {

    private LockInspector inspector() {
        BackendUri parsed = BackendUri.parse(URI.create(uri("")), LockOptions.defaults(), RedisUri.PARAMETERS);
        LockBackend backend = track(new RedisBackendProvider().open(parsed));
        return backend.inspector().orElseThrow();
    }

    private static LockSnapshot only(List<LockSnapshot> locks) {
        assertThat(locks).hasSize(1);
        return locks.get(0);
    }

    /** Waits until lock {@code name} has {@code waiters} waiters, and returns it. */
    private static LockSnapshot awaitWaiters(LockInspector inspector, String name, int waiters) {
        return await().atMost(scaled(10))
                .until(() -> only(inspector.inspect(name)), s -> s.waiters().size() == waiters);
    }

    @Test
    void inspect_exclusiveWithTwoWaiters_showsHolderTokenAndQueueInOrder() throws Exception {
        LockInspector inspector = inspector();
        assertThat(inspector.inspect("")).isEmpty();
        Lease held = client("leaseTime=10s").lock("orders").acquire();
        LockClient b = client("leaseTime=10s");
        LockClient c = client("leaseTime=10s");
        CompletableFuture<Lease> second = b.lock("orders").acquireAsync(scaled(30));
        awaitWaiters(inspector, "orders", 1);
        CompletableFuture<Lease> third = c.lock("orders").acquireAsync(scaled(30));
        LockSnapshot s = awaitWaiters(inspector, "orders", 2);

        assertThat(s.name()).isEqualTo("orders");
        assertThat(s.kind()).isEqualTo(LockKind.EXCLUSIVE);
        assertThat(s.holders()).hasSize(1);
        EntrySnapshot holder = s.holders().get(0);
        assertThat(holder.leaseToken()).isEqualTo(held.fencingToken());
        assertThat(holder.mode()).isEqualTo(LockMode.EXCLUSIVE);
        assertThat(holder.connected()).isTrue();
        assertThat(holder.leaseLeft()).isPositive().isLessThanOrEqualTo(Duration.ofSeconds(10));
        assertThat(holder.since())
                .isBetween(Instant.now().minusSeconds(60), Instant.now().plusSeconds(1));
        assertThat(s.waiters()).extracting(EntrySnapshot::backendToken).containsExactly(0L, 0L);
        String secondClient = s.waiters().get(0).clientId();
        String thirdClient = s.waiters().get(1).clientId();
        assertThat(List.of(holder.clientId(), secondClient, thirdClient)).doesNotHaveDuplicates();

        held.close();
        Lease b1 = second.get();
        LockSnapshot next = awaitWaiters(inspector, "orders", 1);
        assertThat(next.holders()).extracting(EntrySnapshot::clientId).containsExactly(secondClient);
        assertThat(next.holders().get(0).leaseToken()).isEqualTo(b1.fencingToken());
        assertThat(next.waiters()).extracting(EntrySnapshot::clientId).containsExactly(thirdClient);
        b1.close();
        third.get().close();
        await().atMost(scaled(10)).until(() -> inspector.inspect(""), List::isEmpty);
    }

    @Test
    void inspect_readWriteAndSemaphore_showKindModesPermitsAndQueue() throws Exception {
        LockInspector inspector = inspector();
        LockClient r1 = client();
        LockClient r2 = client();
        LockClient w = client();
        Lease read1 = r1.readWriteLock("catalog").readLock().acquire();
        Lease read2 = r2.readWriteLock("catalog").readLock().acquire();
        CompletableFuture<Lease> write = w.readWriteLock("catalog").writeLock().acquireAsync(scaled(30));
        Lease two = r1.semaphore("pool", 3).acquire(2);
        var waiting = CompletableFuture.supplyAsync(() -> {
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
        assertThat(sem.name()).isEqualTo("pool");
        assertThat(sem.kind()).isEqualTo(LockKind.SEMAPHORE);
        assertThat(sem.maxPermits()).isEqualTo(3);
        assertThat(sem.holders()).extracting(EntrySnapshot::permits).containsExactly(2);
        assertThat(sem.holders().get(0).leaseToken()).isEqualTo(two.fencingToken());
        assertThat(sem.waiters()).extracting(EntrySnapshot::permits).containsExactly(2);
        assertThat(inspector.inspect("cat")).extracting(LockSnapshot::name).containsExactly("catalog");
        assertThat(inspector.inspect("p*")).isEmpty();

        read1.close();
        read2.close();
        write.get().close();
        two.close();
        waiting.get().close();
    }

    @Test
    void forceRelease_liveHolder_firesOnLostAndGrantsTheWaiterAHigherToken() throws Exception {
        LockInspector inspector = inspector();
        List<LockLostException> lost = new CopyOnWriteArrayList<>();
        Lease stuck = client("leaseTime=3s").lock("stuck").acquire().onLost(lost::add);
        CompletableFuture<Lease> waiter = client("leaseTime=3s").lock("stuck").acquireAsync(scaled(60));
        LockSnapshot s = awaitWaiters(inspector, "stuck", 1);

        List<String> removed =
                inspector.forceRelease("stuck", List.of(s.holders().get(0).key()));

        assertThat(removed).containsExactly(s.holders().get(0).key());
        Lease next = waiter.get(scaled(10).toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS);
        assertThat(next.fencingToken()).isGreaterThan(stuck.fencingToken());
        await().atMost(scaled(10)).until(() -> lost.size() == 1);
        assertThat(stuck.isValid()).isFalse();
        assertThat(inspector.forceRelease("stuck", removed))
                .as("a removed key removes nothing")
                .isEmpty();
        assertThat(only(inspector.inspect("stuck")).holders())
                .extracting(EntrySnapshot::leaseToken)
                .containsExactly(next.fencingToken());
        stuck.close();
        next.close();
    }

    @Test
    void forceRelease_deadHolder_isShownDisconnectedAndTheWaiterIsGrantedBeforeTheLeaseEnds() throws Exception {
        LockInspector inspector = inspector();
        ChildJvm child = track(ChildJvm.start(LockWorker.class, List.of("hold", uri("leaseTime=60s"), "dead")));
        long deadToken = Long.parseLong(child.awaitLine("HOLDING", scaled(30)).split(" ")[1]);
        child.kill();
        LockSnapshot s = await().atMost(scaled(10))
                .until(
                        () -> only(inspector.inspect("dead")),
                        l -> Boolean.FALSE.equals(l.holders().get(0).connected()));
        assertThat(s.holders().get(0).leaseToken()).isEqualTo(deadToken);
        assertThat(s.holders().get(0).leaseLeft()).isGreaterThan(Duration.ofSeconds(30));
        CompletableFuture<Lease> waiter = client("leaseTime=5s").lock("dead").acquireAsync(scaled(60));
        awaitWaiters(inspector, "dead", 1);

        assertThat(inspector.forceRelease("dead", List.of(s.holders().get(0).key())))
                .hasSize(1);

        Lease next = waiter.get(scaled(10).toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS);
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
        assertThatThrownBy(() -> inspector.watch("kept", Duration.ZERO, l -> {}, e -> {}))
                .isInstanceOf(IllegalArgumentException.class);

        assertThat(only(inspector.inspect("kept")).holders())
                .extracting(EntrySnapshot::key)
                .containsExactly(key);
        assertThat(held.isValid()).isTrue();
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
                inspector.watch("seq", Duration.ofMillis(20), l -> states.add(describe(l)), errors::add)) {
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
        }
        // A release and the next grant are two steps: a read between them sees the waiter alone.
        List<String> seen = new ArrayList<>(states);
        seen.remove(" W");
        assertThat(seen).containsExactly("", seen.get(1), seen.get(1) + " W", seen.get(3), "");
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

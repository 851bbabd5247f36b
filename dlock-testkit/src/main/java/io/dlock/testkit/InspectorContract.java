package io.dlock.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.LockLostException;
import io.dlock.spi.EntrySnapshot;
import io.dlock.spi.LockInspector;
import io.dlock.spi.LockKind;
import io.dlock.spi.LockMode;
import io.dlock.spi.LockSnapshot;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * What every backend's {@link LockInspector} must do against a real server (the operator's
 * {@code dlock inspect|release|watch}): holders with their fencing tokens and the queue in order,
 * for every lock kind; a forced release that lets the next waiter in with a higher token and only
 * ever removes the grant it was shown; a watch that reports each state of a scripted sequence in
 * order. A backend's IT implements it on top of its {@link LockFixture}; what only some backends
 * record (lease time left, connected, host and pid) is checked by the backend's own tests, or here
 * behind a hook.
 */
public interface InspectorContract extends LockFixture {

    /**
     * An inspector on a backend opened for this test (the fixture closes it after the test).
     *
     * <p>Blocking: until connected. Thread-safety: called from the test thread.
     */
    LockInspector inspector();

    /** Closes {@code closeable} after the test; {@link LockFixtureSupport#track} implements it. */
    <T extends AutoCloseable> T track(T closeable);

    /** Options that keep a holder whose process died registered for about a minute. */
    String longHold();

    /** Whether holders' entries carry the lease time left (lease backends; not sessions). */
    default boolean reportsLeaseLeft() {
        return true;
    }

    /**
     * The poll interval passed to {@link LockInspector#watch}: a backend that notifies can pass a
     * long one, so the watch test shows that notifications, not reads, drive it.
     */
    default Duration watchPollInterval() {
        return Duration.ofMillis(20);
    }

    @Test
    default void inspect_exclusiveWithTwoWaiters_showsHolderTokenAndQueueInOrder() throws Exception {
        LockInspector inspector = inspector();
        assertThat(inspector.inspect("")).isEmpty();
        Lease held = newClient().lock("orders").acquire();
        CompletableFuture<Lease> second = newClient().lock("orders").acquireAsync(scaled(30));
        awaitWaiters(inspector, "orders", 1);
        CompletableFuture<Lease> third = newClient().lock("orders").acquireAsync(scaled(30));
        LockSnapshot s = awaitWaiters(inspector, "orders", 2);

        assertThat(s.name()).isEqualTo("orders");
        assertThat(s.kind()).isEqualTo(LockKind.EXCLUSIVE);
        assertThat(s.holders()).hasSize(1);
        EntrySnapshot holder = s.holders().get(0);
        assertThat(holder.mode()).isEqualTo(LockMode.EXCLUSIVE);
        assertThat(holder.leaseToken()).isEqualTo(held.fencingToken());
        assertThat(holder.connected()).isNotEqualTo(Boolean.FALSE);
        if (holder.since() != null) {
            assertThat(holder.since())
                    .isBetween(Instant.now().minusSeconds(60), Instant.now().plusSeconds(1));
        }
        if (reportsLeaseLeft()) {
            assertThat(holder.leaseLeft()).isNotNull().isPositive();
        } else {
            assertThat(holder.leaseLeft()).isNull();
        }
        String secondClient = s.waiters().get(0).clientId();
        String thirdClient = s.waiters().get(1).clientId();
        assertThat(List.of(holder.clientId(), secondClient, thirdClient)).doesNotHaveDuplicates();

        held.close();
        Lease next = second.get();
        LockSnapshot after = awaitWaiters(inspector, "orders", 1);
        assertThat(after.holders()).extracting(EntrySnapshot::clientId).containsExactly(secondClient);
        assertThat(after.holders().get(0).leaseToken()).isEqualTo(next.fencingToken());
        assertThat(after.waiters()).extracting(EntrySnapshot::clientId).containsExactly(thirdClient);
        next.close();
        third.get().close();
        await().atMost(scaled(10)).until(() -> inspector.inspect("").stream()
                .allMatch(l -> l.holders().isEmpty() && l.waiters().isEmpty()));
    }

    @Test
    default void inspect_readWriteAndSemaphore_showKindModesPermitsAndQueue() throws Exception {
        LockInspector inspector = inspector();
        LockClient r1 = newClient();
        LockClient r2 = newClient();
        Lease read1 = r1.readWriteLock("catalog").readLock().acquire();
        Lease read2 = r2.readWriteLock("catalog").readLock().acquire();
        CompletableFuture<Lease> write =
                newClient().readWriteLock("catalog").writeLock().acquireAsync(scaled(30));
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
                .containsExactlyInAnyOrder(read1.fencingToken(), read2.fencingToken());
        assertThat(rw.waiters()).extracting(EntrySnapshot::mode).containsExactly(LockMode.WRITE);
        LockSnapshot sem = all.get(1);
        assertThat(sem.name()).isEqualTo("pool");
        assertThat(sem.kind()).isEqualTo(LockKind.SEMAPHORE);
        assertThat(sem.maxPermits()).isEqualTo(3);
        assertThat(sem.holders()).extracting(EntrySnapshot::permits).containsExactly(2);
        assertThat(sem.holders().get(0).leaseToken()).isEqualTo(two.fencingToken());
        assertThat(sem.waiters()).extracting(EntrySnapshot::permits).containsExactly(2);
        assertThat(inspector.inspect("cat")).extracting(LockSnapshot::name).containsExactly("catalog");
        assertThat(inspector.inspect("p*")).as("a prefix is literal").isEmpty();

        read1.close();
        read2.close();
        write.get().close();
        two.close();
        waiting.get().close();
    }

    @Test
    default void forceRelease_liveHolder_grantsTheWaiterAHigherToken_andTheHolderIsToldWhereSaid() throws Exception {
        LockInspector inspector = inspector();
        List<LockLostException> lost = new CopyOnWriteArrayList<>();
        Lease stuck = client(shortLease()).lock("stuck").acquire().onLost(lost::add);
        CompletableFuture<Lease> waiter = newClient().lock("stuck").acquireAsync(scaled(60));
        LockSnapshot s = awaitWaiters(inspector, "stuck", 1);
        String key = s.holders().get(0).key();

        List<String> removed = inspector.forceRelease("stuck", List.of(key));

        assertThat(removed).containsExactly(key);
        Lease next = waiter.get(scaled(10).toMillis(), TimeUnit.MILLISECONDS);
        assertThat(next.fencingToken()).isGreaterThan(stuck.fencingToken());
        if (inspector.holderNoticesForcedRelease()) {
            await().atMost(scaled(10)).until(() -> lost.size() == 1);
            assertThat(stuck.isValid()).isFalse();
        }
        assertThat(inspector.forceRelease("stuck", removed))
                .as("a key already removed removes nothing, not the next grant")
                .isEmpty();
        assertThat(only(inspector.inspect("stuck")).holders())
                .extracting(EntrySnapshot::leaseToken)
                .containsExactly(next.fencingToken());
        stuck.close();
        next.close();
    }

    /**
     * Options that give a holder a lease of {@code lease} (the renewal interval is a third of it);
     * combined with {@link #patient()}.
     */
    default String lease(Duration lease) {
        return LockFixture.options(patient(), "leaseTime=" + lease.toMillis() + "ms");
    }

    @Test
    default void forceRelease_justGranted_theHolderIsToldAtOnceWhereTheServerNotifies() throws Exception {
        forcedHolderIsTold("fresh", Duration.ZERO);
    }

    @Test
    default void forceRelease_afterRenewals_theHolderIsToldAtOnceWhereTheServerNotifies() throws Exception {
        forcedHolderIsTold("renewed", Duration.ofMillis(4500));
    }

    /**
     * A holder with a long lease (30 s; 6 s when it is held past renewals, renewed every 2 s) is
     * told within 1 s of the forced release's return where {@link LockInspector#forcedReleaseNotice()}
     * says the server notifies; elsewhere (a 3 s lease) by its next renewal, a third of its lease.
     */
    private void forcedHolderIsTold(String name, Duration heldBefore) throws Exception {
        LockInspector inspector = inspector();
        boolean atOnce = inspector.forcedReleaseNotice() == LockInspector.ForcedReleaseNotice.AT_ONCE;
        Duration leaseTime =
                !atOnce ? Duration.ofSeconds(3) : heldBefore.isZero() ? Duration.ofSeconds(30) : Duration.ofSeconds(6);
        List<LockLostException> lost = new CopyOnWriteArrayList<>();
        Lease held = client(lease(leaseTime)).lock(name).acquire().onLost(lost::add);
        long granted = System.nanoTime();
        String key = only(inspector.inspect(name)).holders().get(0).key();
        if (!heldBefore.isZero()) {
            Thread.sleep(heldBefore.toMillis());
        }
        long removing = System.nanoTime();
        assertThat(inspector.forceRelease(name, List.of(key))).containsExactly(key);
        long removed = System.nanoTime();

        Duration bound = atOnce ? Duration.ofSeconds(1) : leaseTime.dividedBy(3).plus(scaled(1));
        await().atMost(bound).pollInterval(Duration.ofMillis(2)).until(() -> !lost.isEmpty());
        long told = System.nanoTime();
        assertThat(held.isValid()).isFalse();
        assertThat(lost).hasSize(1);
        LockLostException e = lost.get(0);
        assertThat(e.lockName()).isEqualTo(name);
        assertThat(e).hasMessageContaining("fencing token " + held.fencingToken());
        if (atOnce) {
            assertThat(e).hasMessageContaining("released by force");
        }
        System.out.printf(
                "[%s] forced release %d ms after the grant; holder told %d ms after forceRelease returned%n",
                backendName(),
                TimeUnit.NANOSECONDS.toMillis(removing - granted),
                TimeUnit.NANOSECONDS.toMillis(told - removed));
        held.close();
        assertThat(lost).hasSize(1);
    }

    @Test
    default void release_byTheHolder_runsNoOnLost() throws Exception {
        List<LockLostException> lost = new CopyOnWriteArrayList<>();
        LockClient a = client(lease(Duration.ofSeconds(30)));
        a.lock("quick").acquire().onLost(lost::add).close();
        Lease slow = a.lock("slow").acquire().onLost(lost::add);
        Thread.sleep(700); // past any deferred watch of the grant
        slow.close();
        Thread.sleep(1000);
        assertThat(lost).isEmpty();
        assertThat(inspector().inspect("")).allMatch(l -> l.holders().isEmpty());
    }

    @Test
    default void forceRelease_oneGrant_leavesTheHoldersOtherLeasesValid() throws Exception {
        LockInspector inspector = inspector();
        boolean atOnce = inspector.forcedReleaseNotice() == LockInspector.ForcedReleaseNotice.AT_ONCE;
        Duration leaseTime = atOnce ? Duration.ofSeconds(30) : Duration.ofSeconds(3);
        List<LockLostException> lostA = new CopyOnWriteArrayList<>();
        List<LockLostException> lostB = new CopyOnWriteArrayList<>();
        LockClient a = client(lease(leaseTime));
        Lease one = a.lock("one").acquire().onLost(lostA::add);
        Lease two = a.lock("two").acquire().onLost(lostA::add);
        Lease three = client(lease(leaseTime)).lock("three").acquire().onLost(lostB::add);
        Thread.sleep(500);

        String threeKey = only(inspector.inspect("three")).holders().get(0).key();
        assertThat(inspector.forceRelease("three", List.of(threeKey))).containsExactly(threeKey);
        String oneKey = only(inspector.inspect("one")).holders().get(0).key();
        assertThat(inspector.forceRelease("one", List.of(oneKey))).containsExactly(oneKey);

        Duration bound = atOnce ? Duration.ofSeconds(1) : leaseTime.dividedBy(3).plus(scaled(1));
        await().atMost(bound).until(() -> lostA.size() == 1 && lostB.size() == 1);
        Thread.sleep(300);
        assertThat(lostA).extracting(LockLostException::lockName).containsExactly("one");
        assertThat(one.isValid()).isFalse();
        assertThat(three.isValid()).isFalse();
        assertThat(two.isValid()).isTrue();
        assertThat(only(inspector.inspect("two")).holders())
                .extracting(EntrySnapshot::leaseToken)
                .containsExactly(two.fencingToken());
        one.close();
        two.close();
        three.close();
    }

    @Test
    default void forceRelease_deadHolder_grantsTheWaiterLongBeforeItsLeaseEnds() throws Exception {
        LockInspector inspector = inspector();
        ChildJvm child = track(ChildJvm.start(LockWorker.class, List.of("hold", uri(longHold()), "dead")));
        long deadToken = Long.parseLong(child.awaitLine("HOLDING", scaled(30)).split(" ")[1]);
        child.kill();
        CompletableFuture<Lease> waiter = newClient().lock("dead").acquireAsync(scaled(60));
        LockSnapshot s = awaitWaiters(inspector, "dead", 1);
        assertThat(s.holders()).extracting(EntrySnapshot::leaseToken).containsExactly(deadToken);

        assertThat(inspector.forceRelease("dead", List.of(s.holders().get(0).key())))
                .hasSize(1);

        Lease next = waiter.get(scaled(10).toMillis(), TimeUnit.MILLISECONDS);
        assertThat(next.fencingToken()).isGreaterThan(deadToken);
        next.close();
    }

    @Test
    default void forceRelease_badInput_throwsAndChangesNothing() throws Exception {
        LockInspector inspector = inspector();
        Lease held = newClient().lock("kept").acquire();
        String key = only(inspector.inspect("kept")).holders().get(0).key();

        assertThatThrownBy(() -> inspector.forceRelease("", List.of(key)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("name");
        assertThatThrownBy(() -> inspector.forceRelease("other", List.of(key)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("no entry of lock 'other'");
        assertThatThrownBy(() -> inspector.watch("", Duration.ofSeconds(1), l -> {}, e -> {}))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> inspector.watch("kept", Duration.ZERO, l -> {}, e -> {}))
                .isInstanceOf(IllegalArgumentException.class);

        assertThat(only(inspector.inspect("kept")).holders())
                .extracting(EntrySnapshot::key)
                .containsExactly(key);
        assertThat(held.isValid()).isTrue();
        held.close();
    }

    @Test
    default void watch_scriptedSequence_reportsEachStateInOrder() throws Exception {
        LockInspector inspector = inspector();
        List<String> states = Collections.synchronizedList(new ArrayList<>());
        List<Throwable> errors = new CopyOnWriteArrayList<>();
        LockClient a = newClient();
        LockClient b = newClient();
        try (LockInspector.Watch watch =
                inspector.watch("seq", watchPollInterval(), l -> states.add(describe(l)), errors::add)) {
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
            // A release and the next grant may be two steps: a read between them sees the waiter alone.
            List<String> seen = new ArrayList<>(states);
            seen.removeIf(" W"::equals);
            assertThat(seen).containsExactly("", h1, h1 + " W", h2, "");
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

    private static Duration scaled(long seconds) {
        return Timing.scale(Duration.ofSeconds(seconds));
    }
}

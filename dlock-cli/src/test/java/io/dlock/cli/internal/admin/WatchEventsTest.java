package io.dlock.cli.internal.admin;

import static org.assertj.core.api.Assertions.assertThat;

import io.dlock.spi.EntrySnapshot;
import io.dlock.spi.LockKind;
import io.dlock.spi.LockMode;
import io.dlock.spi.LockSnapshot;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;

class WatchEventsTest {

    private static EntrySnapshot entry(String key, long token, Duration leaseLeft) {
        return new EntrySnapshot(key, LockMode.EXCLUSIVE, 1, "c-" + key, null, -1, true, token, null, leaseLeft);
    }

    private static List<LockSnapshot> lock(List<EntrySnapshot> holders, List<EntrySnapshot> waiters) {
        return List.of(new LockSnapshot("seq", LockKind.EXCLUSIVE, 1, holders, waiters));
    }

    @Test
    void next_sequence_reportsEndedGrantsBeforeNewOnesAndQueueChanges() {
        WatchEvents events = new WatchEvents();
        Duration long_ = Duration.ofSeconds(30);
        EntrySnapshot a = entry("a", 5, long_);
        EntrySnapshot bWaiting = entry("b", 0, long_);
        EntrySnapshot bHeld = entry("b", 6, long_);

        assertThat(events.next(List.of(), 0)).containsExactly("free (nobody holds or waits)");
        assertThat(events.next(lock(List.of(a), List.of()), 10))
                .singleElement()
                .asString()
                .startsWith("granted  exclusive exclusive client=c-a token=5120");
        assertThat(events.next(lock(List.of(a), List.of(bWaiting)), 20))
                .singleElement()
                .asString()
                .startsWith("queued #1  exclusive exclusive client=c-b");
        assertThat(events.next(lock(List.of(bHeld), List.of()), 30))
                .satisfiesExactly(
                        l -> assertThat(l).startsWith("released").contains("client=c-a"),
                        l -> assertThat(l).startsWith("granted").contains("token=6144"));
        assertThat(events.next(List.of(), 40)).singleElement().asString().startsWith("released");
        assertThat(events.next(List.of(), 50)).isEmpty();
    }

    @Test
    void next_holderWhoseLeaseRanOut_isReportedExpired_andAWaiterThatLeftIsReported() {
        WatchEvents events = new WatchEvents();
        EntrySnapshot a = entry("a", 5, Duration.ofMillis(10));
        EntrySnapshot w = entry("w", 0, Duration.ofSeconds(5));
        assertThat(events.next(lock(List.of(a), List.of(w)), 0))
                .satisfiesExactly(l -> assertThat(l).startsWith("holds"), l -> assertThat(l)
                        .startsWith("waits"));

        assertThat(events.next(List.of(), Duration.ofSeconds(1).toNanos()))
                .satisfiesExactly(
                        l -> assertThat(l).startsWith("expired").contains("c-a"),
                        l -> assertThat(l).startsWith("left queue").contains("c-w"));
    }

    @Test
    void next_grantHeldLongerThanOneLeaseThenReleased_isReportedReleasedOnceItsLeaseTimeWasRefreshed() {
        Duration lease = Duration.ofSeconds(5);
        long sixSeconds = Duration.ofSeconds(6).toNanos();
        WatchEvents refreshed = new WatchEvents();
        WatchEvents stale = new WatchEvents();
        for (WatchEvents events : List.of(refreshed, stale)) {
            events.next(lock(List.of(entry("a", 5, lease)), List.of()), 0);
        }

        refreshed.refresh(
                lock(List.of(entry("a", 5, lease)), List.of()),
                Duration.ofSeconds(4).toNanos());

        assertThat(refreshed.next(List.of(), sixSeconds))
                .singleElement()
                .asString()
                .startsWith("released")
                .contains("c-a");
        assertThat(stale.next(List.of(), sixSeconds)).singleElement().asString().startsWith("expired");
    }

    @Test
    void refresh_reportsNothing_andIgnoresEntriesTheWatchHasNotSeen() {
        WatchEvents events = new WatchEvents();
        events.next(lock(List.of(entry("a", 5, Duration.ofMillis(10))), List.of()), 0);

        events.refresh(
                lock(List.of(entry("a", 5, Duration.ofMillis(10)), entry("x", 9, Duration.ofSeconds(30))), List.of()),
                Duration.ofMillis(1).toNanos());

        assertThat(events.next(List.of(), Duration.ofSeconds(1).toNanos()))
                .singleElement()
                .asString()
                .startsWith("expired")
                .contains("c-a");
        assertThat(events.next(List.of(), Duration.ofSeconds(2).toNanos())).isEmpty();
    }

    @Test
    void table_and_json_showEveryColumn() {
        Instant now = Instant.parse("2026-01-01T00:01:00Z");
        EntrySnapshot h = new EntrySnapshot(
                "k#1", LockMode.SEMAPHORE, 2, "cid", "host1", 42, false, 7, now.minusSeconds(5), Duration.ofSeconds(3));
        List<LockSnapshot> locks =
                List.of(new LockSnapshot("pool \"x\"", LockKind.SEMAPHORE, 3, List.of(h), List.of()));

        String table = SnapshotText.table(locks, now);
        String json = SnapshotText.json(locks, now);

        assertThat(table.lines().toList().get(1).split("\\s{2,}"))
                .containsExactly(
                        "pool \"x\"",
                        "semaphore/3",
                        "held",
                        "semaphore",
                        "2",
                        "cid",
                        "host1",
                        "42",
                        "NO",
                        "7168",
                        "5.0s",
                        "3.0s");
        assertThat(json)
                .isEqualTo(
                        "[{\"name\":\"pool \\\"x\\\"\",\"kind\":\"semaphore\",\"maxPermits\":3,\"holders\":[{\"key\":\"k#1\","
                                + "\"mode\":\"semaphore\",\"permits\":2,\"clientId\":\"cid\",\"host\":\"host1\",\"pid\":42,"
                                + "\"connected\":false,\"token\":7168,\"backendToken\":7,\"since\":\"2026-01-01T00:00:55Z\","
                                + "\"heldForMs\":5000,\"leaseLeftMs\":3000}],\"waiters\":[]}]");
    }
}

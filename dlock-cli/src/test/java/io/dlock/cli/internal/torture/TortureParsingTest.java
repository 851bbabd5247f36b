package io.dlock.cli.internal.torture;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dlock.testkit.FencedStore;
import io.dlock.testkit.FencingChecker;
import io.dlock.testkit.OccupancyStore;
import java.time.Duration;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Option parsing, the worker's arguments and the verdict, without servers. */
class TortureParsingTest {

    @Test
    void parseList_namesAllAndNone_kinds() {
        assertThat(FaultKind.parseList("pause, server-restart"))
                .containsExactlyInAnyOrder(FaultKind.PAUSE, FaultKind.SERVER_RESTART);
        assertThat(FaultKind.parseList("all")).isEqualTo(EnumSet.allOf(FaultKind.class));
        assertThat(FaultKind.parseList("none")).isEmpty();
        assertThat(FaultKind.parseList("")).isEmpty();
        assertThatThrownBy(() -> FaultKind.parseList("pause,oom"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("unknown fault 'oom'");
    }

    @Test
    void backendTargets_uris_embeddedOwnsItsServer() {
        assertThat(BackendTargets.ownsServer("embedded")).isTrue();
        assertThat(BackendTargets.ownsServer("embedded:zookeeper")).isTrue();
        assertThat(BackendTargets.ownsServer("zookeeper://127.0.0.1:2181/x")).isFalse();
        assertThatThrownBy(() -> BackendTargets.validate("etcd://x"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("unsupported --uri 'etcd://x'");
    }

    @Test
    void externalTarget_uri_goesThroughTheProxyAndKeepsExtraParameters() {
        ZooKeeperTarget t = ZooKeeperTarget.external("zookeeper://127.0.0.1:2181/apps/x?sessionTimeout=9s&fair=true");
        assertThat(t.canRestartServer()).isFalse();
        assertThat(t.clientUri("127.0.0.1:5555", "torture-1", Duration.ofMillis(2500)))
                .isEqualTo("zookeeper://127.0.0.1:5555/apps/x/torture-1?sessionTimeout=2500ms&fair=true");
        assertThatThrownBy(() -> t.restartServer(Duration.ZERO)).isInstanceOf(UnsupportedOperationException.class);
        t.close(); // leaves the external server alone
    }

    @Test
    void workerArguments_missingOrNegative_rejectedWithTheName() {
        assertThatThrownBy(() -> TortureWorker.parse(new String[] {"--uri", "x"}))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("--client is required");
        assertThatThrownBy(() -> TortureWorker.parse(new String[] {
                    "--uri",
                    "x",
                    "--client",
                    "w",
                    "--store-port",
                    "-1",
                    "--lock",
                    "l",
                    "--wait-ms",
                    "1",
                    "--work-ms",
                    "1",
                    "--max-runtime-ms",
                    "1"
                }))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("--store-port must be ports >= 0");
        assertThatThrownBy(() -> TortureWorker.parse(new String[] {"--uri"}))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("pairs");
    }

    @Test
    void verdict_fencedStaleWriteAcceptedOrLeftover_fails() {
        FencedStore unsafe = FencedStore.unfenced();
        unsafe.read("paused", 1);
        unsafe.read("next", 2);
        unsafe.write("next", 2, 1);
        unsafe.write("paused", 1, 1);
        TortureConfig fenced = config(true);
        TortureResult r = TortureResult.of(
                fenced,
                "zookeeper",
                "test",
                List.of(),
                unsafe.check(),
                Map.of("w1", List.of("READY", "LOST 5", "REFUSED write 7 false", "TIMEOUT", "ERROR x")),
                List.of(),
                List.of("/t/torture/_c_x-lock-0000000001"),
                List.of(),
                Duration.ofSeconds(1),
                Duration.ofSeconds(2),
                false,
                null);
        assertThat(r.passed()).isFalse();
        assertThat(r.lockLost()).isEqualTo(1);
        assertThat(r.refusedWhileValid()).isZero();
        assertThat(r.timeouts()).isEqualTo(1);
        assertThat(r.errors()).isEqualTo(1);
        assertThat(r.problems())
                .anyMatch(p -> p.contains("stale writes accepted under fencing"))
                .anyMatch(p -> p.contains("lost updates"))
                .anyMatch(p -> p.contains("queue entries left behind"));
        assertThat(r.json())
                .startsWith("{\"backend\":\"zookeeper\"")
                .contains("\"staleWritesAccepted\":1")
                .contains("\"passed\":false")
                .endsWith("]}");
        assertThat(r.table()).contains("stale writes accepted", "leftover queue entries");

        TortureResult unfenced = TortureResult.of(
                config(false),
                "zookeeper",
                "test",
                List.of(),
                unsafe.check(),
                Map.of(),
                List.of(),
                List.of(),
                List.of(),
                Duration.ofSeconds(1),
                Duration.ofSeconds(2),
                false,
                null);
        assertThat(unfenced.passed()).as("%s", unfenced.problems()).isTrue();
        assertThat(unfenced.table()).contains("(unfenced: expected)");
    }

    @Test
    void verdict_slowRecoveryOrValidLeaseRefused_fails() {
        FencedStore store = FencedStore.fenced();
        store.read("w1", 1);
        store.write("w1", 1, 1);
        FaultRecord slow = new FaultRecord(FaultKind.KILL, "w1", "SIGKILL", 1_000, 0, 5_000, 5_000, 4_000);
        TortureResult r = TortureResult.of(
                config(true),
                "zookeeper",
                "test",
                List.of(slow),
                store.check(),
                Map.of("w2", List.of("REFUSED write 3 true")),
                List.of(),
                List.of(),
                List.of(),
                Duration.ofSeconds(1),
                Duration.ofSeconds(2),
                false,
                null);
        assertThat(r.passed()).isFalse();
        assertThat(r.refusedWhileValid()).isEqualTo(1);
        assertThat(r.problems())
                .anyMatch(p -> p.startsWith("kill at 1.0s") && p.contains("recovery took 5000 ms"))
                .anyMatch(p -> p.contains("while its lease was still valid"));
    }

    @Test
    void verdict_restartBeyondItsBoundFails_cutShortFaultOnlyReported() {
        FencedStore store = FencedStore.fenced();
        store.read("w1", 1);
        store.write("w1", 1, 1);
        TortureConfig config = config(true);
        assertThat(config.recoveryBound(FaultKind.SERVER_RESTART)).isEqualTo(Duration.ofSeconds(3));
        assertThat(config.recoveryBound(FaultKind.KILL)).isEqualTo(Duration.ofSeconds(4));
        FaultRecord slowRestart =
                new FaultRecord(FaultKind.SERVER_RESTART, "srv", "SIGKILL, restart", 2_000, 4_000, 9_000, 3_500, 3_000);
        FaultRecord cutShort = new FaultRecord(FaultKind.PAUSE, "w2", "SIGSTOP", 9_000, 1_000, -1, -1, 4_000, true);
        TortureResult r = TortureResult.of(
                config,
                "zookeeper",
                "test",
                List.of(slowRestart, cutShort),
                store.check(),
                Map.of(),
                List.of(),
                List.of(),
                List.of(),
                Duration.ofSeconds(1),
                Duration.ofSeconds(2),
                false,
                null);
        assertThat(r.problems())
                .hasSize(1)
                .first()
                .asString()
                .startsWith("server-restart at 2.0s")
                .contains("recovery took 3500 ms, bound 3000 ms");
        assertThat(r.json())
                .contains("\"restartBoundMs\":3000")
                .contains("\"server-restart\":{\"recovered\":1,\"inBound\":0,\"cutShort\":0")
                .contains("\"pause\":{\"recovered\":0,\"inBound\":0,\"cutShort\":1");
        assertThat(r.table()).contains("cut short");
    }

    @Test
    void config_badDowntimeRange_rejected() {
        assertThatThrownBy(() -> new TortureConfig(
                        "embedded",
                        3,
                        Duration.ofSeconds(10),
                        Set.of(),
                        true,
                        1,
                        Duration.ofSeconds(2),
                        Duration.ofSeconds(2),
                        5,
                        10,
                        false,
                        Duration.ofSeconds(3),
                        Duration.ofSeconds(1),
                        Duration.ofSeconds(1)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("downtime must be a range");
    }

    @Test
    void verdict_sharedPrimitive_violationFails_semaphoreRefusalOfAValidLeaseOnlyCounted() {
        FencedStore values = FencedStore.fenced();
        values.read("w1", 1);
        values.write("w1", 1, 1);
        OccupancyStore rw = OccupancyStore.fencedReadWrite();
        rw.admit("w1", 3, OccupancyStore.Mode.WRITE, 1);
        rw.admit("w2", 3, OccupancyStore.Mode.WRITE, 1); // one token, two clients: fencing cannot help
        TortureConfig rwConfig = config(true).with(Primitive.READ_WRITE, 50, 2, 3);
        TortureResult broken = TortureResult.of(
                rwConfig,
                "zookeeper",
                "test",
                List.of(),
                values.check(),
                Map.of("w2", List.of("READY", "VIOLATION WRITE 3 VIOLATION")),
                List.of(),
                List.of(),
                List.of(),
                Duration.ofSeconds(1),
                Duration.ofSeconds(2),
                false,
                rw.report());
        assertThat(broken.passed()).isFalse();
        assertThat(broken.problems())
                .anyMatch(p -> p.contains("1 read-write rule violations under fencing"))
                .anyMatch(p -> p.contains("the occupancy store admitted w2"));
        assertThat(broken.json()).contains("\"primitive\":\"read-write\"", "\"readPercent\":50", "\"violations\":1");
        assertThat(broken.table()).contains("holders entered (read-write)", "rule violations");

        OccupancyStore sem = OccupancyStore.fencedSemaphore(1);
        sem.admit("w1", 1, OccupancyStore.Mode.PERMITS, 1);
        sem.admit("w2", 2, OccupancyStore.Mode.PERMITS, 1);
        sem.exit("w1", 1);
        sem.exit("w2", 2);
        FencedStore journal = FencedStore.unfenced();
        journal.write("w1", 1, 1);
        journal.write("w2", 2, 1);
        TortureResult semaphore = TortureResult.of(
                config(true).with(Primitive.SEMAPHORE, 50, 1, 3),
                "redis",
                "test",
                List.of(),
                journal.check(),
                Map.of("w1", List.of("READY", "REFUSED leave 1 true")),
                List.of(),
                List.of(),
                List.of(),
                Duration.ofSeconds(1),
                Duration.ofSeconds(2),
                false,
                sem.report());
        assertThat(semaphore.passed()).as("%s", semaphore.problems()).isTrue();
        assertThat(semaphore.refusedWhileValid()).isEqualTo(1);
        assertThat(semaphore.check().staleWritesRejected()).isEqualTo(1);
        assertThat(semaphore.json())
                .contains("\"permits\":1", "\"lostUpdates\":null", "\"fencedOut\":1", "\"staleRefused\":1");
        assertThat(semaphore.table()).contains("most permits inside").contains("n/a");
    }

    @Test
    void observeMode_skippedWritesAndStaleWritesByFault_reported() {
        FencedStore unfenced = FencedStore.unfenced();
        unfenced.read("next", 2);
        unfenced.write("next", 2, 1);
        unfenced.write("paused", 1, 1);
        TortureResult r = TortureResult.of(
                        config(false).withCheckValid(true),
                        "zookeeper",
                        "test",
                        List.of(),
                        unfenced.check(),
                        Map.of("w1", List.of("READY", "SKIPPED 1", "SKIPPED 3")),
                        List.of(),
                        List.of(),
                        List.of(),
                        Duration.ofSeconds(1),
                        Duration.ofSeconds(2),
                        false,
                        null)
                .withStaleByFault(Map.of("pause", 1L));
        assertThat(r.passed()).as("%s", r.problems()).isTrue();
        assertThat(r.skippedWrites()).isEqualTo(2);
        assertThat(r.json())
                .contains("\"checkValid\":true", "\"skippedWrites\":2", "\"staleAcceptedByFault\":{\"pause\":1}");
        assertThat(r.table()).contains("writes skipped (isValid() false)", "stale writes accepted after pause");
    }

    @Test
    void combine_multiLockParts_summed() {
        FencedStore a = FencedStore.fenced();
        a.read("w1", 2);
        a.write("w1", 2, 1);
        a.read("w0", 1); // stale: refused
        FencedStore b = FencedStore.fenced();
        b.read("w1", 4);
        b.write("w1", 4, 1);
        FencingChecker.Report sum = TortureResult.combine(List.of(a.check(), b.check()));
        assertThat(sum.acceptedWrites()).isEqualTo(2);
        assertThat(sum.staleReadsRejected()).isEqualTo(1);
        assertThat(sum.finalValue()).isEqualTo(2);
        assertThat(sum.shortfall()).isZero();
    }

    @Test
    void primitive_parse_knownNamesAndAClearError() {
        assertThat(Primitive.parse(" Read-Write ")).isEqualTo(Primitive.READ_WRITE);
        assertThat(Primitive.parse("multi").capability()).isEqualTo(io.dlock.Capability.MULTI_LOCK);
        assertThatThrownBy(() -> Primitive.parse("mutex"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("must be exclusive, read-write, semaphore, multi or election, was 'mutex'");
        assertThatThrownBy(() -> config(true).with(Primitive.READ_WRITE, 101, 1, 3))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> config(true).with(Primitive.MULTI, 50, 1, 9))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void quote_controlCharacters_escaped() {
        assertThat(TortureResult.quote("a\"b\\c\nd\u0001")).isEqualTo("\"a\\\"b\\\\c\\nd\\u0001\"");
    }

    @Test
    void writesWorkerLog_failedAlways_passedOnlyWhenKept() {
        assertThat(TortureRun.writesWorkerLog(false, null)).isTrue();
        assertThat(TortureRun.writesWorkerLog(false, "false")).isTrue();
        assertThat(TortureRun.writesWorkerLog(true, null)).isFalse();
        assertThat(TortureRun.writesWorkerLog(true, "")).isFalse();
        assertThat(TortureRun.writesWorkerLog(true, "false")).isFalse();
        assertThat(TortureRun.writesWorkerLog(true, "true")).isTrue();
        assertThat(TortureRun.writesWorkerLog(true, " TRUE ")).isTrue();
    }

    @Test
    void verdict_electionTermNotRisingOrRefusedWhileValid_countedAndFails() {
        FencedStore store = FencedStore.fenced();
        store.read("w1", 10);
        store.write("w1", 10, 1);
        store.read("w2", 20);
        store.write("w2", 20, 2);
        store.write("w1", 10, 3); // the ex-leader, refused
        TortureConfig base = config(true);
        TortureConfig election = new TortureConfig(
                base.uri(),
                base.workers(),
                base.duration(),
                base.faults(),
                true,
                base.seed(),
                base.sessionTimeout(),
                base.recoveryMargin(),
                base.workMs(),
                base.maxFaults(),
                false,
                base.downtimeMin(),
                base.downtimeMax(),
                base.restartMargin(),
                Primitive.ELECTION,
                base.readPercent(),
                base.permits(),
                base.parts(),
                false,
                Library.DLOCK);
        FaultRecord kill = new FaultRecord(FaultKind.KILL, "w1", "SIGKILL", 1_000, 0, 2_100, 2_050, 4_000);
        TortureResult good = TortureResult.of(
                election,
                "zookeeper",
                "test",
                List.of(kill),
                store.check(),
                Map.of(
                        "w1", List.of("READY", "ELECTED 10 100", "REVOKED 10", "REFUSED write 10 false"),
                        "w2", List.of("READY", "ELECTED 20 200")),
                List.of(),
                List.of(),
                List.of(),
                Duration.ofSeconds(1),
                Duration.ofSeconds(2),
                false,
                null);
        assertThat(good.passed()).as("%s", good.problems()).isTrue();
        assertThat(good.terms()).isEqualTo(new TortureResult.Terms(2, 0, 0));
        assertThat(good.json())
                .contains("\"election\":{\"terms\":2,\"termsNotRising\":0,\"overlappingValidTerms\":0,"
                        + "\"crashReleaseBoundMs\":2000}")
                .contains("\"blockedP50\":2100");
        assertThat(good.table()).contains("time without a leader", "terms elected");

        TortureResult bad = TortureResult.of(
                election,
                "zookeeper",
                "test",
                List.of(kill),
                store.check(),
                Map.of(
                        "w1", List.of("ELECTED 10 100", "REFUSED write 10 true"),
                        "w2", List.of("ELECTED 20 200"),
                        "w3", List.of("ELECTED 15 300")),
                List.of(),
                List.of(),
                List.of(),
                Duration.ofSeconds(1),
                Duration.ofSeconds(2),
                false,
                null);
        assertThat(bad.terms()).isEqualTo(new TortureResult.Terms(3, 1, 1));
        assertThat(bad.problems())
                .anyMatch(p -> p.contains("1 terms not above every term elected before them"))
                .anyMatch(p -> p.contains("while its lease was still valid"));
    }

    private static TortureConfig config(boolean fenced) {
        return new TortureConfig(
                "embedded",
                3,
                Duration.ofSeconds(10),
                Set.of(FaultKind.KILL),
                fenced,
                1,
                Duration.ofSeconds(2),
                Duration.ofSeconds(2),
                5,
                10);
    }
}

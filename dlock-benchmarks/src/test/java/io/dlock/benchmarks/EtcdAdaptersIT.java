package io.dlock.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;

import io.dlock.testkit.EtcdServer;
import io.dlock.testkit.MutualExclusionChecker;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.options.GetOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The etcd adapters of {@code dlock bench} against a real etcd: one holder at a time with two
 * threads on one client (jetcd's {@code Lock} needs a lease per thread for that; the floor
 * polls), no key left after the releases, and COST's reading of etcd's {@code /metrics}.
 */
class EtcdAdaptersIT {
    private static EtcdServer server;

    @BeforeAll
    static void start() {
        server = EtcdServer.start();
        server.markFreshNamespace(DlockAdapter.NAMESPACE); // a fresh server: no data-loss fence to wait out
    }

    @AfterAll
    static void stop() {
        server.close();
    }

    private static List<String> keys() throws Exception {
        try (Client c = JetcdLockAdapter.client(server.connectString())) {
            return c
                    .getKVClient()
                    .get(
                            ByteSequence.from(new byte[] {0}),
                            GetOption.builder()
                                    .withRange(ByteSequence.from(new byte[] {0}))
                                    .withKeysOnly(true)
                                    .build())
                    .get()
                    .getKvs()
                    .stream()
                    .map(kv -> kv.getKey().toString(java.nio.charset.StandardCharsets.UTF_8))
                    .toList();
        }
    }

    @ParameterizedTest
    @EnumSource(
            value = LockImpl.class,
            names = {"JETCD_LOCK", "JETCD_LOCK_LEASE", "ETCD_FLOOR", "DLOCK_ETCD"})
    void acquire_twoThreadsOneClient_excludeEachOtherAndLeaveNoKey(LockImpl impl) throws Exception {
        Servers servers = new Servers(null, null, null, null, null, server.connectString());
        try (BenchClient client = impl.open(servers)) {
            BenchLock lock = client.lock("shared-" + impl.label());
            MutualExclusionChecker checker = new MutualExclusionChecker();
            AtomicReference<Throwable> failure = new AtomicReference<>();
            List<Thread> threads = new ArrayList<>();
            for (int t = 0; t < 2; t++) {
                String who = "t" + t;
                Thread thread = new Thread(() -> {
                    try {
                        for (int i = 0; i < 50; i++) {
                            BenchLock.Held held = lock.acquire();
                            checker.enter(who);
                            checker.incrementUnsafely();
                            checker.exit(who);
                            held.release();
                        }
                    } catch (Throwable e) {
                        failure.compareAndSet(null, e);
                    }
                });
                thread.start();
                threads.add(thread);
            }
            for (Thread thread : threads) {
                thread.join(120_000);
            }
            assertThat(failure.get()).isNull();
            assertThat(checker.counter()).isEqualTo(100);
            assertThat(checker.violations()).isZero();
            assertThat(keys()).noneMatch(k -> k.contains("shared-" + impl.label()));
        }
    }

    @Test
    void cost_floor_countsOneTxnOneDeleteAndTwoFsyncsPerCycle() throws Exception {
        try (EtcdFloorAdapter floor = new EtcdFloorAdapter(server.connectString())) {
            Map<String, Object> extra = new java.util.LinkedHashMap<>();
            double requests = EtcdMetrics.cost(server.connectString(), floor.lock("cost"), 20, extra);
            assertThat(requests).isEqualTo(2.0);
            assertThat(extra.get("requests")).isEqualTo("KV/DeleteRange:1.00 KV/Txn:1.00");
            assertThat(extra.get("walFsyncsPerCycle")).isEqualTo(2.0);
            assertThat(extra.get("mvccPutsPerCycle")).isEqualTo(1.0);
            assertThat(extra.get("mvccDeletesPerCycle")).isEqualTo(1.0);
        }
    }

    @Test
    void cost_dlockEtcd_sendsTwoTxnsAndTwoRaftWritesPerCycle_asTheFloor() throws Exception {
        Servers servers = new Servers(null, null, null, null, null, server.connectString());
        try (BenchClient dlock = LockImpl.DLOCK_ETCD.open(servers)) {
            Map<String, Object> extra = new java.util.LinkedHashMap<>();
            double requests = EtcdMetrics.cost(server.connectString(), dlock.lock("cost-dlock"), 20, extra);
            assertThat(requests).isEqualTo(2.0);
            assertThat(extra.get("requests")).isEqualTo("KV/Txn:2.00");
            assertThat(extra.get("raftProposalsPerCycle")).isEqualTo(2.0);
            assertThat(extra.get("walFsyncsPerCycle")).isEqualTo(2.0);
            assertThat(extra.get("mvccPutsPerCycle")).isEqualTo(1.0);
            assertThat(extra.get("mvccDeletesPerCycle")).isEqualTo(1.0);
        }
    }

    @Test
    void cost_jetcdLockWithALeasePerAcquisition_writesFourTimesPerCycle() throws Exception {
        try (JetcdLeaseLockAdapter jetcd = new JetcdLeaseLockAdapter(server.connectString())) {
            Map<String, Object> extra = new java.util.LinkedHashMap<>();
            double requests = EtcdMetrics.cost(server.connectString(), jetcd.lock("cost-lease"), 20, extra);
            assertThat(requests).isEqualTo(2.0);
            assertThat(extra.get("requests")).isEqualTo("Lock/Lock:1.00 Lock/Unlock:1.00");
            assertThat(extra.get("leaseRequests")).isEqualTo("Lease/LeaseGrant:1.00 Lease/LeaseRevoke:1.00");
            assertThat(extra.get("raftProposalsPerCycle")).isEqualTo(4.0);
            assertThat(extra.get("walFsyncsPerCycle")).isEqualTo(4.0);
        }
    }
}

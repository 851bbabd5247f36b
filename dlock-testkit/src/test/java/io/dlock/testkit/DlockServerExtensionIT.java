package io.dlock.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ConditionEvaluationResult;
import org.junit.jupiter.api.extension.ExecutionCondition;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.platform.engine.DiscoverySelector;
import org.junit.platform.testkit.engine.EngineExecutionResults;
import org.junit.platform.testkit.engine.EngineTestKit;

/**
 * Runs small test classes through the JUnit engine and checks what {@link DlockServer} gave them:
 * one running server per kind for the whole class, the same instance everywhere, stopped when the
 * class ends.
 */
class DlockServerExtensionIT {
    static final List<Object> injected = new CopyOnWriteArrayList<>();

    @Test
    void everyDeclaredServer_runsForTheWholeClass_andIsStoppedAfterIt() {
        injected.clear();

        EngineExecutionResults results = run(TwoKinds.class);

        results.testEvents().assertStatistics(s -> s.started(3).succeeded(3).failed(0));
        assertThat(injected).hasSize(6);
        RedisServer redis = (RedisServer) injected.get(0);
        EmbeddedZooKeeper zk = (EmbeddedZooKeeper) injected.get(1);
        assertThat(injected.stream().filter(o -> o instanceof RedisServer)).allMatch(o -> o == redis);
        assertThat(injected.stream().filter(o -> o instanceof EmbeddedZooKeeper))
                .allMatch(o -> o == zk);
        assertThat(redis.isAlive()).as("redis-server stopped after the class").isFalse();
        assertThatThrownBy(() -> connect(zk.port()))
                .as("ZooKeeper stopped after the class")
                .isInstanceOf(IOException.class);
    }

    @Test
    void oneKind_isInjectedAsTestServer_andSharedWithNestedClasses() {
        injected.clear();

        EngineExecutionResults results = run(OneKind.class);

        results.testEvents().assertStatistics(s -> s.started(2).succeeded(2).failed(0));
        assertThat(injected).hasSize(2).allMatch(o -> o == injected.get(0));
        assertThat(((MemcachedServer) injected.get(0)).isAlive()).isFalse();
    }

    @Test
    void aServerTheClassDidNotDeclare_failsTheTestWithoutStartingIt() {
        injected.clear();

        EngineExecutionResults results = run(Undeclared.class);

        results.testEvents().assertStatistics(s -> s.started(1).failed(1));
        assertThat(injected).isEmpty();
    }

    @Test
    void runScope_sharesOneServerAmongClasses_andStopsItWhenTheRunEnds() {
        injected.clear();

        EngineExecutionResults results = run(RunScopedA.class, RunScopedB.class);

        results.testEvents().assertStatistics(s -> s.started(2).succeeded(2).failed(0));
        assertThat(injected).hasSize(2);
        assertThat(injected.get(1)).isSameAs(injected.get(0));
        assertThat(((MemcachedServer) injected.get(0)).isAlive())
                .as("memcached stopped when the run ended")
                .isFalse();
    }

    private static EngineExecutionResults run(Class<?>... testClasses) {
        return EngineTestKit.engine("junit-jupiter")
                .selectors(Arrays.stream(testClasses).map(c -> selectClass(c)).toArray(DiscoverySelector[]::new))
                .configurationParameter(SampleOnly.PARAMETER, "true")
                .execute();
    }

    /**
     * The sample classes below run only inside {@link #run}: a pattern such as {@code
     * -Dit.test='DlockServer*'} also selects nested classes, and {@link Undeclared} fails on purpose.
     */
    static final class SampleOnly implements ExecutionCondition {
        static final String PARAMETER = "dlock.testkit.sample";

        @Override
        public ConditionEvaluationResult evaluateExecutionCondition(ExtensionContext context) {
            return context.getConfigurationParameter(PARAMETER).isPresent()
                    ? ConditionEvaluationResult.enabled("run by DlockServerExtensionIT")
                    : ConditionEvaluationResult.disabled("a sample for DlockServerExtensionIT, not a test of its own");
        }
    }

    private static void connect(int port) throws IOException {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 1_000);
        }
    }

    @ExtendWith(SampleOnly.class)
    @DlockServer({DlockServer.Kind.REDIS, DlockServer.Kind.ZOOKEEPER})
    static class TwoKinds {
        @BeforeAll
        static void before(RedisServer redis, EmbeddedZooKeeper zk) {
            injected.add(redis);
            injected.add(zk);
        }

        @Test
        void first(RedisServer redis, EmbeddedZooKeeper zk) throws IOException {
            injected.add(redis);
            injected.add(zk);
            assertThat(redis.command("PING")).isEqualTo("PONG");
            connect(zk.port());
        }

        @Test
        void second(RedisServer redis) {
            injected.add(redis);
            assertThat(redis.isAlive()).isTrue();
        }

        @Test
        void third(EmbeddedZooKeeper zk) throws IOException {
            injected.add(zk);
            connect(zk.port());
        }
    }

    @ExtendWith(SampleOnly.class)
    @DlockServer(DlockServer.Kind.MEMCACHED)
    static class OneKind {
        @Test
        void outer(TestServer server) {
            injected.add(server);
            assertThat(((MemcachedServer) server).isAlive()).isTrue();
        }

        @Nested
        class Inner {
            @Test
            void inner(MemcachedServer server) {
                injected.add(server);
            }
        }
    }

    @ExtendWith(SampleOnly.class)
    @DlockServer(DlockServer.Kind.MEMCACHED)
    static class Undeclared {
        @Test
        void wantsRedis(RedisServer redis) {
            injected.add(redis);
        }
    }

    @ExtendWith(SampleOnly.class)
    @DlockServer(value = DlockServer.Kind.MEMCACHED, scope = DlockServer.Scope.RUN)
    static class RunScopedA {
        @Test
        void first(MemcachedServer server) {
            injected.add(server);
            assertThat(server.isAlive()).isTrue();
        }
    }

    @ExtendWith(SampleOnly.class)
    @DlockServer(value = DlockServer.Kind.MEMCACHED, scope = DlockServer.Scope.RUN)
    static class RunScopedB {
        @Test
        void second(MemcachedServer server) {
            injected.add(server);
            assertThat(server.isAlive())
                    .as("the server of RunScopedA, still running")
                    .isTrue();
        }
    }
}

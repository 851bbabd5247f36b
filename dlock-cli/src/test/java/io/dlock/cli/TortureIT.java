package io.dlock.cli;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The CI-sized torture on the coordination servers: {@code dlock torture} on an embedded ZooKeeper
 * (child JVM), a 3-server ZooKeeper ensemble (server-restart kills the leader) and etcd, for 45 s each
 * with every fault kind, in fenced mode. Fails on any accepted stale write, lost update, overlap that
 * got through fencing, leftover znode or key, stuck worker, or recovery beyond session timeout +
 * margin (the command's own verdict), and checks the JSON figures itself as well. {@link
 * TortureStoresIT} does the same on Redis, PostgreSQL and memcached.
 */
@Tag("torture")
class TortureIT {

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"embedded", "embedded:zookeeper-ensemble", "embedded:etcd"})
    @Timeout(value = 110, unit = TimeUnit.SECONDS)
    void torture_allFaultsFenced_passes(String uri) {
        TortureRuns.allFaultsFenced(uri);
    }
}

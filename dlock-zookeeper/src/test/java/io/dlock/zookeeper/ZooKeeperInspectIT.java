package io.dlock.zookeeper;

import io.dlock.LockOptions;
import io.dlock.spi.BackendUri;
import io.dlock.spi.LockBackend;
import io.dlock.spi.LockInspector;
import io.dlock.testkit.InspectorContract;
import java.net.URI;
import java.time.Duration;
import java.util.Set;

/** The operator view on a real ZooKeeper: the inspector contract; sessions have no lease time left. */
class ZooKeeperInspectIT extends ZooKeeperTestSupport implements InspectorContract {

    @Override
    public LockInspector inspector() {
        BackendUri parsed = BackendUri.parse(URI.create(uri("")), LockOptions.defaults(), Set.of());
        LockBackend backend = track(new ZooKeeperBackendProvider().open(parsed));
        return backend.inspector().orElseThrow();
    }

    @Override
    public String longHold() {
        return "sessionTimeout=60s";
    }

    @Override
    public boolean reportsLeaseLeft() {
        return false;
    }

    /** Watches drive it: a poll interval this long would miss every step. */
    @Override
    public Duration watchPollInterval() {
        return Duration.ofSeconds(30);
    }
}

package io.dlock.testkit;

import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooKeeper;

/** A plain ZooKeeper client that records the session states it sees, for the ITs. */
final class ZkClients implements AutoCloseable {

    final List<Watcher.Event.KeeperState> states = new CopyOnWriteArrayList<>();
    final ZooKeeper zk;

    private ZkClients(String connectString, Duration sessionTimeout) throws Exception {
        zk = new ZooKeeper(connectString, (int) sessionTimeout.toMillis(), this::record);
    }

    static ZkClients connect(TestServer server, Duration sessionTimeout) throws Exception {
        return connect(server.connectString(), sessionTimeout);
    }

    static ZkClients connect(String connectString, Duration sessionTimeout) throws Exception {
        ZkClients client = new ZkClients(connectString, sessionTimeout);
        await().atMost(Timing.scale(Duration.ofSeconds(15)))
                .until(() -> client.zk.getState().isConnected());
        return client;
    }

    private void record(WatchedEvent event) {
        if (event.getType() == Watcher.Event.EventType.None) {
            states.add(event.getState());
        }
    }

    @Override
    public void close() throws InterruptedException {
        zk.close();
    }
}

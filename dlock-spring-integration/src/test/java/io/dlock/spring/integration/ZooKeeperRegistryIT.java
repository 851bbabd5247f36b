package io.dlock.spring.integration;

import io.dlock.testkit.DlockServer;
import io.dlock.testkit.EmbeddedZooKeeper;
import org.junit.jupiter.api.BeforeAll;

/** The registry contract on ZooKeeper (in-process server). */
@DlockServer(DlockServer.Kind.ZOOKEEPER)
class ZooKeeperRegistryIT extends RegistryContract {
    static EmbeddedZooKeeper server;

    @BeforeAll
    static void server(EmbeddedZooKeeper started) {
        server = started;
    }

    @Override
    String uri(String namespace) {
        return server.uri(namespace);
    }
}

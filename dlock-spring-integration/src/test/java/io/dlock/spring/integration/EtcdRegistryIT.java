package io.dlock.spring.integration;

import io.dlock.testkit.DlockServer;
import io.dlock.testkit.EtcdServer;
import org.junit.jupiter.api.BeforeAll;

/** The registry contract on etcd. */
@DlockServer(DlockServer.Kind.ETCD)
class EtcdRegistryIT extends LeaseRegistryContract {
    static EtcdServer server;

    @BeforeAll
    static void server(EtcdServer started) {
        server = started;
    }

    @Override
    void prepare(String namespace) {
        server.markFreshNamespace(namespace); // a fresh test namespace never granted anything: no data-loss fence
    }

    @Override
    String uri(String namespace) {
        return server.uri(namespace);
    }
}

package io.dlock.reactor;

import io.dlock.testkit.DlockServer;
import io.dlock.testkit.EmbeddedZooKeeper;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.TestInfo;

/** {@link ReactorContract} on an embedded ZooKeeper; one namespace per test. */
@DlockServer(DlockServer.Kind.ZOOKEEPER)
class ZooKeeperReactorIT extends ReactorContract {
    static EmbeddedZooKeeper server;

    String namespace;

    @BeforeAll
    static void server(EmbeddedZooKeeper started) {
        server = started;
    }

    @BeforeEach
    void newNamespace(TestInfo info) {
        namespace = "rx-" + info.getTestMethod().orElseThrow().getName();
    }

    @Override
    public String backendName() {
        return "zookeeper";
    }

    @Override
    public String patient() {
        return "sessionTimeout=10s";
    }

    @Override
    public String shortLease() {
        return "sessionTimeout=2s";
    }

    @Override
    public java.time.Duration crashReleaseBound() {
        return java.time.Duration.ofSeconds(6);
    }

    @Override
    public String uri(String query) {
        return server.uri(namespace) + (query.isEmpty() ? "" : "?" + query);
    }

    @Override
    String uriVia(int port, String query) {
        return "zookeeper://127.0.0.1:" + port + "/" + namespace + "?" + query;
    }

    @Override
    int serverPort() {
        return server.port();
    }
}

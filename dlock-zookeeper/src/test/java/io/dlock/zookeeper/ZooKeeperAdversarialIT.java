package io.dlock.zookeeper;

import io.dlock.testkit.AdversarialContract;
import java.util.List;

class ZooKeeperAdversarialIT extends ZooKeeperTestSupport implements AdversarialContract {

    @Override
    public String longLease() {
        return "sessionTimeout=20s";
    }

    @Override
    public List<String> durationOptions() {
        return List.of("leaseTime", "sessionTimeout", "connectTimeout", "retryBaseSleep", "retryMaxSleep");
    }

    @Override
    public String manyHeldLocksOptions() {
        // A session that rides out the stalls 20,000 grants and their checks cause on two busy cores.
        return "leaseTime=15s&sessionTimeout=20s";
    }

    @Override
    public List<String> neighbourNamespaces() {
        return List.of("adv", "adv/orders", "adv/x", "adv-x", "adv/orders/x");
    }

    @Override
    public String uriIn(String namespace, String options) {
        return server.uri(this.namespace + "-" + namespace) + (options.isEmpty() ? "" : "?" + options);
    }

    @Override
    public List<String> urisWithSecret(String secret) {
        String hp = "127.0.0.1:" + server.port();
        String ns = "/" + namespace;
        return List.of(
                "zookeeper://app:" + secret + "@" + hp + ns + "?connectTimeout=2s",
                "zookeeper://app:" + secret + "@" + hp + ",127.0.0.1:1" + ns + "?connectTimeout=2s",
                "zookeeper://app:" + secret + "@127.0.0.1:1" + ns + "?connectTimeout=1s",
                "zookeeper://app:" + secret + "@" + hp + ns + "?noSuchParameter=1",
                "zookeeper://app:" + secret + "@" + hp + ns + "?sessionTimeout=1y",
                "zookeeper://:" + secret + "@" + hp + ns + "?connectTimeout=2s");
    }

    @Override
    public int serverPort() {
        return server.port();
    }

    @Override
    public String uriAt(int port, String options) {
        return "zookeeper://127.0.0.1:" + port + "/" + namespace + (options.isEmpty() ? "" : "?" + options);
    }
}

package io.dlock.etcd;

import io.dlock.testkit.AdversarialContract;
import java.util.List;

class EtcdAdversarialIT extends EtcdTestSupport implements AdversarialContract {

    @Override
    public String longLease() {
        return "leaseTime=20s";
    }

    @Override
    public List<String> durationOptions() {
        return List.of("leaseTime", "connectTimeout", "retryBaseSleep", "retryMaxSleep");
    }

    @Override
    public List<String> neighbourNamespaces() {
        return List.of("adv", "adv/orders", "adv/x", "adv-x", "adv/orders/x", "adv/s");
    }

    @Override
    public String uriIn(String namespace, String options) {
        String ns = prefix + "-" + namespace;
        markEpoch(inspector, ns);
        return server.uri(ns) + (options.isEmpty() ? "" : "?" + options);
    }

    @Override
    public boolean keepsDataLossFence() {
        return true;
    }

    @Override
    public Deployment freshDeployment(String options) {
        String ns = prefix + "-fresh-" + Long.toString(System.nanoTime(), 36); // no marker: never used
        return new Deployment(server.uri(ns) + "?" + options, () -> {});
    }

    @Override
    public List<String> urisWithSecret(String secret) {
        String hp = "127.0.0.1:" + server.port();
        String ns = "/" + prefix;
        return List.of(
                "etcd://app:" + secret + "@" + hp + ns + "?connectTimeout=2s",
                "etcds://app:" + secret + "@" + hp + ns + "?connectTimeout=2s",
                "etcd://app:" + secret + "@" + hp + ",127.0.0.1:1" + ns + "?connectTimeout=2s",
                "etcd://app:" + secret + "@127.0.0.1:1" + ns + "?connectTimeout=1s",
                "etcd://app:" + secret + "@" + hp + ns + "?noSuchParameter=1",
                "etcd://app:" + secret + "@" + hp + ns + "?leaseTime=1y");
    }

    @Override
    public int serverPort() {
        return server.port();
    }

    @Override
    public String uriAt(int port, String options) {
        return "etcd://127.0.0.1:" + port + "/" + prefix + (options.isEmpty() ? "" : "?" + options);
    }
}

package io.dlock.redis;

import io.dlock.testkit.AdversarialContract;
import java.util.List;

class RedisAdversarialIT extends RedisTestSupport implements AdversarialContract {

    @Override
    public String longLease() {
        return "leaseTime=20s";
    }

    @Override
    public List<String> neighbourNamespaces() {
        return List.of("adv", "adv:orders", "adv:x", "adv-x", "adv:orders:x");
    }

    @Override
    public String uriIn(String namespace, String options) {
        String ns = prefix + "-" + namespace;
        markContinuous(server, ns);
        return server.uri(ns) + (options.isEmpty() ? "" : "&" + options);
    }

    @Override
    public boolean keepsDataLossFence() {
        return true;
    }

    @Override
    public Deployment freshDeployment(String options) {
        String ns = prefix + "-fresh-" + Long.toString(System.nanoTime(), 36); // no marker: never used
        return new Deployment(server.uri(ns) + "&" + options, () -> {});
    }

    @Override
    public List<String> urisWithSecret(String secret) {
        String hp = "127.0.0.1:" + server.port();
        String q = "?keyPrefix=" + prefix + "&connectTimeout=2s";
        return List.of(
                "redis://:" + secret + "@" + hp + q,
                "redis://app:" + secret + "@" + hp + q,
                "rediss://app:" + secret + "@" + hp + q,
                "redis-sentinel://:" + secret + "@" + hp + "/0" + q + "&master=m",
                "redis-cluster://app:" + secret + "@" + hp + q,
                "redis://:" + secret + "@" + hp + ",127.0.0.1:1" + q,
                "redis://:" + secret + "@" + hp + q + "&noSuchParameter=1",
                "redis://:" + secret + "@" + hp + q + "&leaseTime=1y");
    }

    @Override
    public int serverPort() {
        return server.port();
    }

    @Override
    public String uriAt(int port, String options) {
        return "redis://127.0.0.1:" + port + "?keyPrefix=" + prefix + (options.isEmpty() ? "" : "&" + options);
    }
}

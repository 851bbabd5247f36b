package io.dlock.memcached;

import io.dlock.testkit.AdversarialContract;
import java.time.Duration;
import java.util.List;

class MemcachedAdversarialIT extends MemcachedTestSupport implements AdversarialContract {

    @Override
    public String longLease() {
        return "leaseTime=20s";
    }

    @Override
    public Duration maxLeaseTime() {
        return Duration.ofSeconds(MemcachedUri.MAX_LEASE.toSeconds()).truncatedTo(java.time.temporal.ChronoUnit.HOURS);
    }

    @Override
    public List<String> neighbourNamespaces() {
        // No ':' in a prefix (it ends the prefix in every key); these differ only after a shared start.
        return List.of("a", "a.l", "a-l", "a_l", "a.w", "a.l.l");
    }

    @Override
    public String uriIn(String namespace, String options) {
        return server.uri(prefix + "-" + namespace) + (options.isEmpty() ? "" : "&" + options);
    }

    @Override
    public boolean keepsDataLossFence() {
        return true;
    }

    /** The boot marker is per server: a brand-new deployment is a server of its own. */
    @Override
    public Deployment freshDeployment(String options) {
        io.dlock.testkit.MemcachedServer fresh = io.dlock.testkit.MemcachedServer.start();
        return new Deployment(fresh.uri(prefix) + "&" + options, fresh::close);
    }

    @Override
    public List<String> urisWithSecret(String secret) {
        String hp = "127.0.0.1:" + server.port();
        String q = "?keyPrefix=" + prefix + "&connectTimeout=2s";
        return List.of(
                "memcached://app:" + secret + "@" + hp + q,
                "memcached://app:" + secret + "@" + hp + ",127.0.0.1:1" + q,
                "memcached://app:" + secret + "@" + hp + q + "&noSuchParameter=1",
                "memcached://app:" + secret + "@" + hp + q + "&leaseTime=1y");
    }

    @Override
    public int serverPort() {
        return server.port();
    }

    @Override
    public String uriAt(int port, String options) {
        return "memcached://127.0.0.1:" + port + "?keyPrefix=" + prefix + (options.isEmpty() ? "" : "&" + options);
    }
}

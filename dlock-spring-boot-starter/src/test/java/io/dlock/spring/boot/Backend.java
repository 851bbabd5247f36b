package io.dlock.spring.boot;

import io.dlock.testkit.EmbeddedZooKeeper;
import io.dlock.testkit.RedisServer;
import java.util.List;

/** A real server from the testkit behind the starter's tests: start, stop, restart, what is left on it. */
abstract class Backend implements AutoCloseable {
    abstract String name();

    /** The URI for a namespace of this test's own. */
    abstract String uri(String namespace);

    /** Options for quick loss detection (2 s lease or session). */
    abstract String shortLeaseProperty();

    /** Makes the server unreachable (stopped; its port stays). */
    abstract void stop();

    /** Brings it back on the same port. */
    abstract void restart();

    /** What dlock left under the namespace (znodes or keys). */
    abstract List<String> leftovers(String namespace);

    @Override
    public abstract void close();

    static Backend zookeeper() {
        EmbeddedZooKeeper zk = EmbeddedZooKeeper.start();
        return new Backend() {
            @Override
            String name() {
                return "zookeeper";
            }

            @Override
            String uri(String namespace) {
                return zk.uri(namespace);
            }

            @Override
            String shortLeaseProperty() {
                return "dlock.session-timeout=2s";
            }

            @Override
            void stop() {
                zk.stop();
            }

            @Override
            void restart() {
                zk.restart();
            }

            @Override
            List<String> leftovers(String namespace) {
                // Lock parents are containers the server removes on its own; their children are the grants.
                return zk.children("/" + namespace).stream()
                        .flatMap(lock -> zk.children("/" + namespace + "/" + lock).stream()
                                .map(c -> lock + "/" + c))
                        .toList();
            }

            @Override
            public void close() {
                zk.close();
            }
        };
    }

    static Backend redis() {
        RedisServer redis = RedisServer.start();
        return new Backend() {
            @Override
            String name() {
                return "redis";
            }

            @Override
            String uri(String namespace) {
                // A fresh prefix on a fresh server: nothing was ever granted under it, so skip
                // dlock-redis's data-loss fence (a lease time) by marking its epoch continuous.
                redis.markFreshPrefix(namespace);
                return redis.uri(namespace);
            }

            @Override
            String shortLeaseProperty() {
                return "dlock.lease-time=2s";
            }

            @Override
            void stop() {
                redis.kill();
            }

            @Override
            void restart() {
                redis.restart();
            }

            @Override
            @SuppressWarnings("unchecked")
            List<String> leftovers(String namespace) {
                return ((List<String>) redis.command("KEYS", namespace + ":*"))
                        .stream().filter(k -> !k.endsWith(":epoch")).toList();
            }

            @Override
            public void close() {
                redis.close();
            }
        };
    }
}

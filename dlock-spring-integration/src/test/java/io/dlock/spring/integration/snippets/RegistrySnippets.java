package io.dlock.spring.integration.snippets;

import io.dlock.LockClient;
import io.dlock.spring.integration.DLockRegistry;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;
import org.springframework.context.annotation.Bean;
import org.springframework.integration.support.leader.LockRegistryLeaderInitiator;

/**
 * The snippets of docs/spring-integration.md, compiled here (on Spring Integration 6.5 and, through
 * dlock-spring-integration7-it, 7); the page quotes the regions between {@code tag::} and {@code
 * end::} and DocsTest checks that they match.
 */
@SuppressWarnings("unused")
final class RegistrySnippets {

    interface Store {
        void write(String order, long token);
    }

    private final Store store = (order, token) -> {};
    private final String order = "order-1";

    static final class Beans {
        // spotless:off
        // tag::beans[]
        @Bean(destroyMethod = "close")
        LockClient lockClient() {
            return LockClient.connect("zookeeper://127.0.0.1:2181/shop");
        }

        @Bean
        DLockRegistry lockRegistry(LockClient client) {
            return DLockRegistry.of(client, "orders");   // lock names "orders:<key>"
        }
        // end::beans[]
        // spotless:on
    }

    void use(DLockRegistry registry, String orderId) throws InterruptedException {
        // spotless:off
        // tag::use[]
        Lock lock = registry.obtain(orderId);
        if (lock.tryLock(5, TimeUnit.SECONDS)) {
            try {
                store.write(order, registry.fencingToken(orderId)); // the store refuses older tokens
            } finally {
                lock.unlock();
            }
        }
        // end::use[]
        // spotless:on
    }

    static final class Leader {
        // spotless:off
        // tag::leader[]
        @Bean
        LockRegistryLeaderInitiator leaderInitiator(DLockRegistry registry) {
            LockRegistryLeaderInitiator initiator = new LockRegistryLeaderInitiator(registry);
            initiator.setHeartBeatMillis(500);  // how often the leader re-checks its lock
            return initiator;                   // OnGrantedEvent / OnRevokedEvent go to the context
        }
        // end::leader[]
        // spotless:on
    }
}

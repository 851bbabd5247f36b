package io.dlock.benchmarks;

import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.integration.redis.util.RedisLockRegistry;

/**
 * Spring Integration's {@code RedisLockRegistry} with its defaults (the spin-lock type: a waiter
 * re-tries its {@code SET}-like script every 100 ms; a JVM-local {@code ReentrantLock} per key in
 * front; keys expire after 60 s), on Spring Data Redis's {@code LettuceConnectionFactory} to the
 * same server.
 *
 * <p>Thread-safety: safe from any thread; a lock is released by the thread that took it.
 */
final class SpringRedisLockAdapter implements BenchClient {
    private final LettuceConnectionFactory factory;
    private final RedisLockRegistry registry;

    SpringRedisLockAdapter(String address) {
        int colon = address.lastIndexOf(':');
        this.factory = new LettuceConnectionFactory(new RedisStandaloneConfiguration(
                address.substring(0, colon), Integer.parseInt(address.substring(colon + 1))));
        factory.afterPropertiesSet();
        factory.start();
        this.registry = new RedisLockRegistry(factory, "spring-bench");
    }

    @Override
    public BenchLock lock(String name) {
        return BenchLock.of(registry.obtain(name));
    }

    @Override
    public void close() {
        try {
            registry.destroy();
        } finally {
            factory.destroy();
        }
    }
}

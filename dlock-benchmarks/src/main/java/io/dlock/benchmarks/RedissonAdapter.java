package io.dlock.benchmarks;

import org.redisson.Redisson;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

/**
 * Redisson's {@code RLock} or {@code RFairLock} as its documentation shows them: {@code lock()}
 * without a lease time (so the watchdog renews it), {@code unlock()} on the same thread. The client
 * keeps Redisson's default pool and thread settings, which are what users get.
 *
 * <p>Thread-safety: safe from any thread; a lock is released by the thread that acquired it.
 */
final class RedissonAdapter implements BenchClient {
    private static final String PREFIX = "redisson-bench:";

    private final RedissonClient redisson;
    private final boolean fair;

    RedissonAdapter(String address, boolean fair) {
        Config config = new Config();
        config.useSingleServer().setAddress("redis://" + address);
        this.redisson = Redisson.create(config);
        this.fair = fair;
    }

    @Override
    public BenchLock lock(String name) {
        return BenchLock.of(fair ? redisson.getFairLock(PREFIX + "fair:" + name) : redisson.getLock(PREFIX + name));
    }

    @Override
    public void close() {
        redisson.shutdown();
    }
}

package io.dlock.benchmarks.torture;

import io.dlock.cli.internal.torture.TortureWorker;
import java.net.URI;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.redisson.Redisson;
import org.redisson.api.RFencedLock;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

/**
 * A torture worker on Redisson's {@code RLock}, used as Redisson's documentation shows: one client,
 * {@code tryLock(wait, unit)} without a lease time (the lock watchdog renews it, here every third of
 * the torture's lease time, {@code lockWatchdogTimeout}) and {@code unlock()} on the same thread.
 *
 * <p>The lock is taken as {@code RFencedLock}, which is {@code RLock}'s algorithm plus a counter
 * incremented in the same script that grants: its token is used only to tell which write was stale
 * (the store in observe mode refuses nothing). Careful ({@code --check-valid}): Redisson tells its
 * user nothing when the watchdog fails or the key expires, so the only check is to ask the server,
 * {@code isHeldByCurrentThread()}, right before the write.
 *
 * <p>Thread-safety: a process entry point.
 */
public final class RedissonTortureWorker {
    private RedissonTortureWorker() {}

    /**
     * Runs the worker; see {@link TortureWorker} for the options and the protocol.
     *
     * @param args {@code --name value} pairs
     */
    public static void main(String[] args) {
        TortureWorker.runAnchor(args, RedissonAnchor::open);
    }

    private static final class RedissonAnchor implements TortureWorker.AnchorLock {
        private final RedissonClient client;
        private final RFencedLock lock;

        private RedissonAnchor(RedissonClient client, RFencedLock lock) {
            this.client = client;
            this.lock = lock;
        }

        static RedissonAnchor open(Map<String, String> options) {
            URI uri = AnchorUris.uri(options, "redis");
            Duration lease = AnchorUris.duration(uri, "leaseTime");
            String prefix = AnchorUris.query(uri, "keyPrefix").orElse("torture");
            Config config = new Config();
            config.useSingleServer().setAddress("redis://" + uri.getHost() + ":" + uri.getPort());
            config.setLockWatchdogTimeout(lease.toMillis());
            RedissonClient client = Redisson.create(config);
            return new RedissonAnchor(client, client.getFencedLock(prefix + ":" + AnchorUris.lockName(options)));
        }

        @Override
        public Optional<TortureWorker.AnchorLease> tryAcquire(Duration wait) {
            Long granted = lock.tryLockAndGetToken(wait.toMillis(), TimeUnit.MILLISECONDS);
            if (granted == null) {
                return Optional.empty();
            }
            long token = granted;
            return Optional.of(new TortureWorker.AnchorLease() {
                @Override
                public long token() {
                    return token;
                }

                @Override
                public boolean stillHeld() {
                    return lock.isHeldByCurrentThread();
                }

                @Override
                public void release() {
                    lock.unlock();
                }
            });
        }

        @Override
        public void close() {
            client.shutdown();
        }
    }
}

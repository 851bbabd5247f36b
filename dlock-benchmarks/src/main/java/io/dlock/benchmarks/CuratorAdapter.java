package io.dlock.benchmarks;

import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.ExponentialBackoffRetry;

/**
 * Apache Curator's {@code InterProcessMutex}, as its documentation shows it: one framework client,
 * one mutex object per lock path, {@code acquire()} and {@code release()} on the same thread.
 *
 * <p>Thread-safety: safe from any thread; a mutex is released by the thread that acquired it.
 */
final class CuratorAdapter implements BenchClient {
    static final String ROOT = "/curator-bench/";

    private final CuratorFramework curator;

    CuratorAdapter(String connectString) {
        // Session and connection timeouts as dlock's defaults (10 s each), so neither side gets a
        // different ping rate; Curator's usual retry policy.
        curator = CuratorFrameworkFactory.newClient(connectString, 10_000, 10_000, new ExponentialBackoffRetry(100, 3));
        curator.start();
        try {
            if (!curator.blockUntilConnected(10, TimeUnit.SECONDS)) {
                curator.close();
                throw new IllegalStateException("Curator could not connect to ZooKeeper at " + connectString);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            curator.close();
            throw new IllegalStateException("interrupted while connecting Curator", e);
        }
    }

    @Override
    public BenchLock lock(String name) {
        InterProcessMutex mutex = new InterProcessMutex(curator, ROOT + name);
        BenchLock.Held held = () -> {
            try {
                mutex.release();
            } catch (RuntimeException e) {
                throw e;
            } catch (Exception e) {
                throw new IllegalStateException("Curator release of " + name + " failed", e);
            }
        };
        return () -> {
            try {
                mutex.acquire();
            } catch (InterruptedException | RuntimeException e) {
                throw e;
            } catch (Exception e) {
                throw new IllegalStateException("Curator acquire of " + name + " failed", e);
            }
            return held;
        };
    }

    @Override
    public void close() {
        curator.close();
    }
}

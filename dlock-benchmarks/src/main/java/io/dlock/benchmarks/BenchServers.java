package io.dlock.benchmarks;

import io.dlock.testkit.ChildJvm;
import io.dlock.testkit.FreePorts;
import io.dlock.testkit.RedisServer;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;
import org.apache.zookeeper.server.ZooKeeperServerMain;
import org.jspecify.annotations.Nullable;

/**
 * The servers of one run, each a separate process on a free loopback port so that its CPU is not
 * counted in the client JVM: ZooKeeper in a child JVM ({@link ChildJvm} running {@code
 * ZooKeeperServerMain}) and {@code redis-server} (the testkit's {@link RedisServer}, without
 * persistence). {@link #close()} stops them by pid and deletes their directories.
 *
 * <p>Why not the testkit's {@code ZooKeeperProcess}: it runs the server with {@code
 * -XX:TieredStopAtLevel=1} (C1 only, for fast test start-up) and a 128 MB heap, which slows every
 * request and cannot hold W4's 200,000 znodes. A benchmark needs a server JVM as production runs
 * it; the configuration is otherwise the same ({@code forceSync=no}, so neither server fsyncs: Redis
 * runs without AOF; {@code --zk-fsync} turns ZooKeeper's on).
 *
 * <p>Thread-safety: start and close from one thread.
 */
final class BenchServers implements AutoCloseable {
    /**
     * JVM options of the ZooKeeper server: C2, a heap large enough for W4, pauses kept short, and
     * empty containers removed every 60 s as ZooKeeper's default does, or as often as the system
     * property {@code dlock.bench.zooKeeperContainerCheckMs} says (to see what that removal costs the
     * implementations whose lock parents are containers: dlock and Curator, not the floor).
     */
    static final List<String> ZOOKEEPER_JVM_OPTIONS = List.of(
            "-Xms512m",
            "-Xmx1g",
            "-XX:+UseG1GC",
            "-Dzookeeper.admin.enableServer=false",
            "-Dzookeeper.4lw.commands.whitelist=*",
            "-Dzookeeper.jmx.log4j.disable=true",
            "-Dznode.container.checkIntervalMs=" + Long.getLong("dlock.bench.zooKeeperContainerCheckMs", 60_000L));

    private static final Duration START_TIMEOUT = Duration.ofSeconds(60);

    private final List<Path> directories = new ArrayList<>();
    private @Nullable ChildJvm zookeeper;
    private @Nullable RedisServer redis;
    private io.dlock.testkit.@Nullable MemcachedServer memcached;
    private io.dlock.testkit.@Nullable PostgresServer postgres;
    private io.dlock.testkit.@Nullable MariaDbServer mariadb;
    private io.dlock.testkit.@Nullable EtcdServer etcd;
    private @Nullable String memcachedAddress;
    private @Nullable String zookeeperAddress;
    private @Nullable String redisAddress;

    /**
     * Starts the servers {@code backends} need; {@code redisServer} (nullable) names the binary.
     *
     * <p>Blocking: until each answers (ZooKeeper {@code ruok}, Redis {@code PING}), at most 60 s
     * each. On failure: {@link IllegalStateException} with the server's last output; whatever was
     * started is stopped.
     *
     * @param zooKeeperFsync whether ZooKeeper fsyncs its log before it answers ({@code forceSync=yes})
     */
    static BenchServers start(List<Backend> backends, @Nullable String redisServer, boolean zooKeeperFsync) {
        BenchServers s = new BenchServers();
        try {
            if (backends.contains(Backend.ZOOKEEPER)) {
                s.startZooKeeper(zooKeeperFsync);
            }
            if (backends.contains(Backend.REDIS)) {
                s.startRedis(redisServer);
            }
            if (backends.contains(Backend.MEMCACHED)) {
                s.startMemcached();
            }
            if (backends.contains(Backend.POSTGRESQL)) {
                // Durable: every grant and release is a commit that waits for its WAL flush, as in production.
                s.postgres = io.dlock.testkit.PostgresServer.start(true);
            }
            if (backends.contains(Backend.MARIADB)) {
                s.mariadb = io.dlock.testkit.MariaDbServer.start();
            }
            if (backends.contains(Backend.ETCD)) {
                s.etcd = io.dlock.testkit.EtcdServer.start(); // fsyncs its WAL before each write is answered
                // As for Redis: a fresh server never granted in the namespace, so no data-loss fence.
                s.etcd.markFreshNamespace(DlockAdapter.NAMESPACE);
            }
            return s;
        } catch (RuntimeException e) {
            s.close();
            throw e;
        }
    }

    Servers servers() {
        return new Servers(
                zookeeperAddress,
                redisAddress,
                memcachedAddress,
                postgres == null
                        ? null
                        : postgres.jdbcUrl() + "?user=" + io.dlock.testkit.PostgresServer.USER + "&password="
                                + io.dlock.testkit.PostgresServer.PASSWORD,
                mariadb == null
                        ? null
                        : mariadb.jdbcUrl() + "?user=" + io.dlock.testkit.MariaDbServer.USER + "&password="
                                + io.dlock.testkit.MariaDbServer.PASSWORD,
                etcd == null ? null : etcd.connectString());
    }

    /** The pid of each running server, for its CPU time. */
    java.util.Map<Backend, Long> pids() {
        java.util.Map<Backend, Long> out = new java.util.EnumMap<>(Backend.class);
        if (zookeeper != null) {
            out.put(Backend.ZOOKEEPER, zookeeper.pid());
        }
        if (redis != null) {
            out.put(Backend.REDIS, redis.pid());
        }
        if (memcached != null) {
            out.put(Backend.MEMCACHED, memcached.pid());
        }
        if (postgres != null) {
            out.put(Backend.POSTGRESQL, postgres.pid());
        }
        if (etcd != null) {
            out.put(Backend.ETCD, etcd.pid());
        }
        return out; // (MariaDbServer does not expose its pid: no server CPU for MariaDB)
    }

    /** The pid of each running server, for the report. */
    List<String> describe() {
        List<String> out = new ArrayList<>();
        if (zookeeper != null) {
            out.add("zookeeper " + zookeeperAddress + " pid " + zookeeper.pid() + " " + ZOOKEEPER_JVM_OPTIONS);
        }
        if (redis != null) {
            out.add("redis " + redisAddress + " pid " + redis.pid());
        }
        if (memcached != null) {
            out.add("memcached " + memcachedAddress + " pid " + memcached.pid());
        }
        if (postgres != null) {
            out.add("postgresql " + postgres.jdbcUrl() + " pid " + postgres.pid() + " (fsync on)");
        }
        if (mariadb != null) {
            out.add("mariadb " + mariadb.jdbcUrl() + " (innodb_flush_log_at_trx_commit=2)");
        }
        if (etcd != null) {
            out.add("etcd " + etcd.connectString() + " pid " + etcd.pid() + " (WAL fsync on)");
        }
        return out;
    }

    private void startZooKeeper(boolean fsync) {
        int port = FreePorts.loopback();
        Path work = tempDir("dlock-bench-zk-");
        Path config = work.resolve("zoo.cfg");
        write(
                config,
                List.of(
                        "tickTime=500",
                        "minSessionTimeout=1000",
                        "maxSessionTimeout=60000",
                        "dataDir=" + work.resolve("data").toAbsolutePath(),
                        "clientPort=" + port,
                        "clientPortAddress=127.0.0.1",
                        "maxClientCnxns=0",
                        "admin.enableServer=false",
                        "4lw.commands.whitelist=*",
                        "forceSync=" + (fsync ? "yes" : "no"),
                        // Snapshots every 100k txns would stall the server mid-run; W4 writes ~600k.
                        "snapCount=10000000"));
        zookeeper = ChildJvm.start(ZooKeeperServerMain.class, List.of(config.toString()), ZOOKEEPER_JVM_OPTIONS);
        zookeeperAddress = "127.0.0.1:" + port;
        long deadline = System.nanoTime() + START_TIMEOUT.toNanos();
        while (true) {
            try {
                if (ServerStats.fourLetterWord(zookeeperAddress, "ruok").equals("imok")) {
                    return;
                }
            } catch (UncheckedIOException e) {
                // not listening yet
            }
            if (!zookeeper.isAlive() || System.nanoTime() - deadline > 0) {
                throw new IllegalStateException(
                        "ZooKeeper at " + zookeeperAddress + " did not start: " + String.join("\n", zookeeper.lines()));
            }
            sleep(50);
        }
    }

    private void startRedis(@Nullable String redisServer) {
        if (redisServer != null) {
            System.setProperty(RedisServer.BINARY_PROPERTY, redisServer);
        }
        redis = RedisServer.builder().persistence(false).start(); // no AOF fsync, as ZooKeeper's forceSync=no
        // A fresh server has no epoch marker, which dlock-redis reads as lost data and fences for a
        // lease time; this one is known to have granted nothing yet.
        redis.markFreshPrefix(DlockAdapter.NAMESPACE);
        redisAddress = "127.0.0.1:" + redis.port();
    }

    /**
     * Starts memcached and lets its first quarantine pass: a fresh server has no boot marker, so the
     * first dlock client grants nothing there for its lease time. A client with a 1 s lease takes
     * that first quarantine before the run.
     */
    private void startMemcached() {
        memcached = io.dlock.testkit.MemcachedServer.start(1024);
        memcachedAddress = "127.0.0.1:" + memcached.port();
        try (io.dlock.LockClient settle =
                io.dlock.LockClient.connect("memcached://" + memcachedAddress + "?keyPrefix=settle&leaseTime=1s")) {
            settle.lock("settle")
                    .tryAcquire(START_TIMEOUT)
                    .orElseThrow(() -> new IllegalStateException(
                            "memcached at " + memcachedAddress + " granted nothing within " + START_TIMEOUT))
                    .close();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while settling memcached", e);
        }
    }

    private Path tempDir(String prefix) {
        try {
            Path dir = Files.createTempDirectory(prefix);
            directories.add(dir);
            return dir;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static void write(Path file, List<String> lines) {
        try {
            Files.createDirectories(file.getParent());
            Files.write(file, lines, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis); // polls readiness: neither server offers a start-up callback
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while starting a server", e);
        }
    }

    /** Stops every server by pid and deletes its directory. Idempotent; never throws. */
    @Override
    public void close() {
        if (zookeeper != null) {
            zookeeper.close();
        }
        if (redis != null) {
            redis.close();
        }
        if (memcached != null) {
            memcached.close();
        }
        if (postgres != null) {
            postgres.close();
        }
        if (mariadb != null) {
            mariadb.close();
        }
        if (etcd != null) {
            etcd.close();
        }
        for (Path dir : directories) {
            try (Stream<Path> walk = Files.walk(dir)) {
                walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            } catch (IOException | UncheckedIOException e) {
                // left behind in the temp directory
            }
        }
        directories.clear();
    }
}

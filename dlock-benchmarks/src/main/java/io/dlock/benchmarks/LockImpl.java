package io.dlock.benchmarks;

import io.dlock.LockOptions;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.Locale;
import java.util.function.Function;

/**
 * The implementations under test, one adapter each (Caffeine's {@code CacheType} pattern). The
 * label is what the command line, the table and the JSON lines use.
 */
public enum LockImpl {
    /** dlock's ZooKeeper backend, defaults (fair, reentrant). */
    DLOCK_ZK(
            "dlock-zk",
            Backend.ZOOKEEPER,
            Role.DLOCK,
            true,
            s -> DlockAdapter.zookeeper(s.address(Backend.ZOOKEEPER), LockOptions.defaults())),
    /** dlock's ZooKeeper backend with JVM-local queueing off: every waiter stands in ZooKeeper's queue. */
    DLOCK_ZK_NO_LOCAL_QUEUE(
            "dlock-zk-nolq",
            Backend.ZOOKEEPER,
            Role.DLOCK,
            true,
            s -> DlockAdapter.zookeeper(
                    s.address(Backend.ZOOKEEPER),
                    LockOptions.builder().localQueueing(false).build())),
    /** Apache Curator's {@code InterProcessMutex}. */
    CURATOR("curator", Backend.ZOOKEEPER, Role.ANCHOR, true, s -> new CuratorAdapter(s.address(Backend.ZOOKEEPER))),
    /** The bare protocol: create an ephemeral-sequential node, delete it. Not a lock: W1 and cost only. */
    ZK_FLOOR(
            "zk-floor",
            Backend.ZOOKEEPER,
            Role.FLOOR,
            false,
            s -> new ZooKeeperFloorAdapter(s.address(Backend.ZOOKEEPER))),
    /** Diagnostic, not in the default set: the floor through ZooKeeper's callback API. */
    ZK_FLOOR_ASYNC(
            "zk-floor-async",
            Backend.ZOOKEEPER,
            Role.FLOOR,
            false,
            s -> new ZooKeeperFloorAdapter(s.address(Backend.ZOOKEEPER), ZooKeeperFloorAdapter.Mode.ASYNC)),
    /** Diagnostic, not in the default set: dlock's three requests (create, getChildren pipelined, delete) without dlock. */
    ZK_PROTOCOL(
            "zk-protocol",
            Backend.ZOOKEEPER,
            Role.FLOOR,
            false,
            s -> new ZooKeeperFloorAdapter(s.address(Backend.ZOOKEEPER), ZooKeeperFloorAdapter.Mode.PIPELINED)),
    /**
     * Diagnostic, not in the default set: one transaction (create, and set the parent's data, whose
     * stat says how many children it has), then delete: what learning "first in line" costs without
     * a read.
     */
    ZK_MULTI(
            "zk-multi",
            Backend.ZOOKEEPER,
            Role.FLOOR,
            false,
            s -> new ZooKeeperFloorAdapter(s.address(Backend.ZOOKEEPER), ZooKeeperFloorAdapter.Mode.MULTI)),
    /** dlock's Redis backend, defaults (fair queue in Lua, leases renewed, JVM-local queueing). */
    DLOCK_REDIS(
            "dlock-redis",
            Backend.REDIS,
            Role.DLOCK,
            true,
            s -> DlockAdapter.redis(s.address(Backend.REDIS), LockOptions.defaults())),
    /** dlock's Redis backend with JVM-local queueing off. */
    DLOCK_REDIS_NO_LOCAL_QUEUE(
            "dlock-redis-nolq",
            Backend.REDIS,
            Role.DLOCK,
            true,
            s -> DlockAdapter.redis(
                    s.address(Backend.REDIS),
                    LockOptions.builder().localQueueing(false).build())),
    /**
     * Diagnostic, not in the default set: dlock's Redis backend, defaults, recording its meters in
     * a Micrometer {@code SimpleMeterRegistry} (metrics on vs off, issue 16).
     */
    DLOCK_REDIS_METRICS(
            "dlock-redis-metrics",
            Backend.REDIS,
            Role.DLOCK,
            true,
            s -> DlockAdapter.redis(
                    s.address(Backend.REDIS),
                    LockOptions.builder()
                            .metricsRegistry(new SimpleMeterRegistry())
                            .build())),
    /** Redisson's {@code RLock} (non-fair, pub/sub wake-ups, watchdog renewal). */
    REDISSON("redisson", Backend.REDIS, Role.ANCHOR, true, s -> new RedissonAdapter(s.address(Backend.REDIS), false)),
    /** Redisson's {@code RFairLock}. */
    REDISSON_FAIR(
            "redisson-fair",
            Backend.REDIS,
            Role.ANCHOR,
            true,
            s -> new RedissonAdapter(s.address(Backend.REDIS), true)),
    /** Spring Integration's {@code RedisLockRegistry}, defaults (spin lock: waiters re-try every 100 ms). */
    SPRING_REDIS(
            "spring-redis",
            Backend.REDIS,
            Role.ANCHOR,
            true,
            s -> new SpringRedisLockAdapter(s.address(Backend.REDIS))),
    /** The bare protocol: {@code SET NX PX}, then a compare-and-delete script. W1 and cost only. */
    REDIS_FLOOR("redis-floor", Backend.REDIS, Role.FLOOR, false, s -> new RedisFloorAdapter(s.address(Backend.REDIS))),
    /**
     * Diagnostic, not in the default set: the least a fenced grant needs without a script ({@code
     * MULTI, SET NX PX, TIME, EXEC}), then the floor's compare-and-delete. W1 and cost only.
     */
    REDIS_FENCED_FLOOR(
            "redis-fenced-floor",
            Backend.REDIS,
            Role.FLOOR,
            false,
            s -> new RedisFloorAdapter(s.address(Backend.REDIS), RedisFloorAdapter.Mode.FENCED)),
    /** dlock's memcached backend, defaults (add lock, CAS-checked release, polling waiters, JVM-local queueing). */
    DLOCK_MEMCACHED(
            "dlock-memcached",
            Backend.MEMCACHED,
            Role.DLOCK,
            true,
            s -> DlockAdapter.memcached(s.address(Backend.MEMCACHED), LockOptions.defaults())),
    /** dlock's memcached backend with JVM-local queueing off: every waiter polls memcached. */
    DLOCK_MEMCACHED_NO_LOCAL_QUEUE(
            "dlock-memcached-nolq",
            Backend.MEMCACHED,
            Role.DLOCK,
            true,
            s -> DlockAdapter.memcached(
                    s.address(Backend.MEMCACHED),
                    LockOptions.builder().localQueueing(false).build())),
    /**
     * The bare {@code add} lock of seed 001: {@code add} with an expiry to acquire, polling with
     * the same back-off as dlock while held elsewhere, a plain {@code delete} to release (no owner
     * check, no token). Contended too, so that W2 and W3 compare against its polling.
     */
    MEMCACHED_FLOOR(
            "memcached-floor",
            Backend.MEMCACHED,
            Role.FLOOR,
            true,
            s -> new MemcachedFloorAdapter(s.address(Backend.MEMCACHED))),
    /** dlock-jdbc on PostgreSQL, defaults (fair, LISTEN/NOTIFY wake-ups, leases renewed, JVM-local queueing). */
    DLOCK_PG(
            "dlock-pg",
            Backend.POSTGRESQL,
            Role.DLOCK,
            true,
            s -> DlockAdapter.jdbc(s.address(Backend.POSTGRESQL), LockOptions.defaults())),
    /** Spring Integration's {@code JdbcLockRegistry} on PostgreSQL (waiters re-try every 100 ms). */
    SPRING_JDBC_PG(
            "spring-jdbc-pg",
            Backend.POSTGRESQL,
            Role.ANCHOR,
            true,
            s -> new SpringJdbcLockAdapter(s.address(Backend.POSTGRESQL))),
    /** ShedLock's JDBC provider on PostgreSQL; it never waits, so W1 only. */
    SHEDLOCK_PG(
            "shedlock-pg",
            Backend.POSTGRESQL,
            Role.ANCHOR,
            false,
            s -> new ShedLockAdapter(s.address(Backend.POSTGRESQL))),
    /** The bare grant upsert and release statement on one pool, on PostgreSQL. W1 only. */
    SQL_FLOOR_PG(
            "sql-floor-pg",
            Backend.POSTGRESQL,
            Role.FLOOR,
            false,
            s -> new SqlFloorAdapter(s.address(Backend.POSTGRESQL))),
    /** dlock-jdbc on MariaDB, defaults (fair, one poller per client, leases renewed, JVM-local queueing). */
    DLOCK_MARIADB(
            "dlock-mariadb",
            Backend.MARIADB,
            Role.DLOCK,
            true,
            s -> DlockAdapter.jdbc(s.address(Backend.MARIADB), LockOptions.defaults())),
    /** Spring Integration's {@code JdbcLockRegistry} on MariaDB. */
    SPRING_JDBC_MARIADB(
            "spring-jdbc-mariadb",
            Backend.MARIADB,
            Role.ANCHOR,
            true,
            s -> new SpringJdbcLockAdapter(s.address(Backend.MARIADB))),
    /** ShedLock's JDBC provider on MariaDB; W1 only. */
    SHEDLOCK_MARIADB(
            "shedlock-mariadb",
            Backend.MARIADB,
            Role.ANCHOR,
            false,
            s -> new ShedLockAdapter(s.address(Backend.MARIADB))),
    /** The bare conditional grant and release statements on one pool, on MariaDB. W1 only. */
    SQL_FLOOR_MARIADB(
            "sql-floor-mariadb",
            Backend.MARIADB,
            Role.FLOOR,
            false,
            s -> new SqlFloorAdapter(s.address(Backend.MARIADB))),
    /** dlock's etcd backend, defaults (one lease per client, FIFO by create revision, JVM-local queueing). */
    DLOCK_ETCD(
            "dlock-etcd",
            Backend.ETCD,
            Role.DLOCK,
            true,
            s -> DlockAdapter.connect(
                    "etcd://" + s.address(Backend.ETCD) + "/" + DlockAdapter.NAMESPACE, LockOptions.defaults())),
    /** jetcd's {@code Lock} client (etcd's server-side v3lock), one lease per thread. */
    JETCD_LOCK("jetcd-lock", Backend.ETCD, Role.ANCHOR, true, s -> new JetcdLockAdapter(s.address(Backend.ETCD))),
    /** jetcd's {@code Lock} client as its own test shows it: a lease granted per acquisition, revoked at release. */
    JETCD_LOCK_LEASE(
            "jetcd-lock-lease",
            Backend.ETCD,
            Role.ANCHOR,
            true,
            s -> new JetcdLeaseLockAdapter(s.address(Backend.ETCD))),
    /** The bare protocol: a transaction "absent → put with the lease", then a delete. W1 and cost only. */
    ETCD_FLOOR("etcd-floor", Backend.ETCD, Role.FLOOR, false, s -> new EtcdFloorAdapter(s.address(Backend.ETCD)));

    /** What an implementation is in the comparison. */
    public enum Role {
        /** dlock itself. */
        DLOCK,
        /** A library users have today; dlock's targets are ratios against it. */
        ANCHOR,
        /** The least any lock on that server must do; a lower bound on the work, not a usable lock. */
        FLOOR
    }

    private final String label;
    private final Backend backend;
    private final Role role;
    private final boolean contendable;
    private final Function<Servers, BenchClient> opener;

    LockImpl(String label, Backend backend, Role role, boolean contendable, Function<Servers, BenchClient> opener) {
        this.label = label;
        this.backend = backend;
        this.role = role;
        this.contendable = contendable;
        this.opener = opener;
    }

    /**
     * The short name, for example {@code curator}.
     *
     * @return the label
     */
    public String label() {
        return label;
    }

    /**
     * The server this implementation runs on.
     *
     * @return the backend
     */
    public Backend backend() {
        return backend;
    }

    /**
     * Its role in the comparison.
     *
     * @return dlock, anchor or floor
     */
    public Role role() {
        return role;
    }

    /**
     * Whether it is a real lock that waiters can queue on, so that it takes part in the contended
     * workloads (W2, W3) and W4. The floors are not: they only measure the least work per cycle.
     *
     * @return true for real locks
     */
    public boolean contendable() {
        return contendable;
    }

    /**
     * Whether it runs when {@code --impls} is not given: all but the diagnostic floor variants.
     *
     * @return true for the default set
     */
    public boolean inDefaultSet() {
        return this != ZK_FLOOR_ASYNC
                && this != ZK_PROTOCOL
                && this != ZK_MULTI
                && this != REDIS_FENCED_FLOOR
                && this != DLOCK_REDIS_METRICS;
    }

    /**
     * Connects a client to the run's servers.
     *
     * <p>Blocking: until connected. Thread-safety: safe from any thread. On failure: an unchecked
     * exception naming the server; nothing is left open.
     *
     * @param servers where the servers listen
     * @return the connected client
     */
    public BenchClient open(Servers servers) {
        return opener.apply(servers);
    }

    /**
     * Finds an implementation by label or constant name, ignoring case.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: {@link
     * IllegalArgumentException} listing the known labels.
     *
     * @param text for example {@code curator} or {@code DLOCK_ZK}
     * @return the implementation
     */
    public static LockImpl parse(String text) {
        String t = text.trim().toLowerCase(Locale.ROOT);
        for (LockImpl impl : values()) {
            if (impl.label.equals(t) || impl.name().toLowerCase(Locale.ROOT).equals(t)) {
                return impl;
            }
        }
        StringBuilder known = new StringBuilder();
        for (LockImpl impl : values()) {
            known.append(known.length() == 0 ? "" : ", ").append(impl.label);
        }
        throw new IllegalArgumentException("unknown implementation '" + text + "'; known: " + known);
    }
}

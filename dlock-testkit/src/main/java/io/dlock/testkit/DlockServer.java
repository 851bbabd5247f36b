package io.dlock.testkit;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Inherited;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Starts the servers a test class needs, once for the class, and stops them after its last test.
 *
 * <p>Each declared kind runs one server with the testkit's defaults (a free loopback port, its own
 * data directory, killed by pid at the end). Constructors, {@code @BeforeAll}, {@code @BeforeEach}
 * and test methods receive a running server by declaring a parameter of its class ({@link
 * RedisServer}, {@link EmbeddedZooKeeper}, ...) or of type {@link TestServer} when the class
 * declares one kind. A server whose binary is missing fails the class with the Debian package to
 * install; it never skips. Subclasses inherit the annotation, so a backend's test support class
 * declares it once:
 *
 * <pre>{@code
 * @DlockServer(DlockServer.Kind.REDIS)
 * abstract class RedisTestSupport {
 *     static RedisServer server;
 *
 *     @BeforeAll
 *     static void server(RedisServer started) {
 *         server = started;
 *     }
 * }
 * }</pre>
 *
 * <p>{@link Scope#RUN} shares one server of each kind among every class of the test run that asks
 * for it with that scope, for servers slow to start (PostgreSQL, MariaDB); tests then keep apart by
 * namespace or table, and the server stops when the run ends.
 *
 * <p>Tests that need a server configured differently (TLS, a replica, no persistence) start it
 * themselves with the server class's builder.
 */
@Documented
@Inherited
@Retention(RetentionPolicy.RUNTIME)
@Target(ElementType.TYPE)
@ExtendWith(DlockServerExtension.class)
public @interface DlockServer {

    /**
     * The servers to start.
     *
     * @return one entry per server kind; duplicates start one server
     */
    Kind[] value();

    /**
     * How long the servers live.
     *
     * @return {@link Scope#CLASS} (the default) or {@link Scope#RUN}
     */
    Scope scope() default Scope.CLASS;

    /** How long a server lives and who shares it. */
    enum Scope {
        /** One server per test class (nested classes share their enclosing class's), stopped after it. */
        CLASS,
        /** One server per kind for the whole test run, shared by every class with this scope. */
        RUN
    }

    /** A server the testkit can start, with the class a test receives. */
    enum Kind {
        /** An in-process ZooKeeper server. */
        ZOOKEEPER(EmbeddedZooKeeper.class),
        /** A redis-server process. */
        REDIS(RedisServer.class),
        /** An etcd process. */
        ETCD(EtcdServer.class),
        /** A PostgreSQL cluster run by an unprivileged user. */
        POSTGRES(PostgresServer.class),
        /** A MariaDB server. */
        MARIADB(MariaDbServer.class),
        /** A memcached process. */
        MEMCACHED(MemcachedServer.class);

        final Class<? extends TestServer> type;

        Kind(Class<? extends TestServer> type) {
            this.type = type;
        }

        TestServer start() {
            return switch (this) {
                case ZOOKEEPER -> EmbeddedZooKeeper.start();
                case REDIS -> RedisServer.start();
                case ETCD -> EtcdServer.start();
                case POSTGRES -> PostgresServer.start();
                case MARIADB -> MariaDbServer.start();
                case MEMCACHED -> MemcachedServer.start();
            };
        }
    }
}

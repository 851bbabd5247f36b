package io.dlock.jdbc;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;

/**
 * A {@link DataSource} over the test database for races a test must stage: its connections hold
 * the statement texts it watches at {@code prepareStatement} while the gate is closed, until it is
 * opened (at most 30 s), and record which thread prepared each of them.
 */
final class StatementGate {
    /** Opens a connection to the real database. */
    @FunctionalInterface
    interface ConnectionSource {
        Connection get() throws SQLException;
    }

    private final java.util.Set<String> watched;
    private final CountDownLatch reached = new CountDownLatch(1);
    private final CountDownLatch opened = new CountDownLatch(1);
    private final List<String> threads = new CopyOnWriteArrayList<>();
    private volatile boolean closed;

    /** A gate on these statement texts (compared whole). */
    StatementGate(String... watched) {
        this.watched = java.util.Set.of(watched);
    }

    /** Holds the watched statements from now on, until {@link #open()}. */
    void close() {
        closed = true;
    }

    void open() {
        closed = false;
        opened.countDown();
    }

    /** Whether a watched statement reached the closed gate within {@code within}. */
    boolean awaitHeld(Duration within) throws InterruptedException {
        return reached.await(within.toMillis(), TimeUnit.MILLISECONDS);
    }

    /** The names of the threads that prepared a watched statement, in order. */
    List<String> threads() {
        return List.copyOf(threads);
    }

    DataSource dataSource(ConnectionSource source) {
        InvocationHandler ds = (proxy, method, args) -> {
            if (method.getName().equals("getConnection")) {
                return connection(source.get());
            }
            if (method.getName().equals("unwrap") || method.getName().equals("isWrapperFor")) {
                throw new SQLException("not a wrapper");
            }
            throw new UnsupportedOperationException(method.getName());
        };
        return (DataSource) Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] {DataSource.class}, ds);
    }

    private Connection connection(Connection real) {
        InvocationHandler h = (proxy, method, args) -> {
            if (method.getName().equals("prepareStatement") && watched.contains(args[0])) {
                threads.add(Thread.currentThread().getName());
                if (closed) {
                    reached.countDown();
                    if (!opened.await(30, TimeUnit.SECONDS)) {
                        throw new SQLException("the test never opened the gate");
                    }
                }
            }
            try {
                return method.invoke(real, args);
            } catch (InvocationTargetException e) {
                throw e.getCause();
            }
        };
        return (Connection) Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] {Connection.class}, h);
    }
}

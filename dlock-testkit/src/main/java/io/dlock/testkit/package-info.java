/**
 * Test support for dlock: real servers (an in-process ZooKeeper, ZooKeeper in a separate JVM),
 * child JVMs to kill or pause, a TCP {@link io.dlock.testkit.FaultProxy} that delays, blackholes
 * or resets connections, and checkers for mutual exclusion and fencing ({@link
 * io.dlock.testkit.FencedStore}, served to other JVMs by {@link io.dlock.testkit.FencedStoreServer}
 * and judged by {@link io.dlock.testkit.FencingChecker}).
 *
 * <p>Every server listens on 127.0.0.1 only, on a free port, and every process started here is
 * recorded by pid and killed on {@code close()} or, as a last resort, by a JVM shutdown hook.
 * Nothing in this package is meant for production code.
 */
@NullMarked
package io.dlock.testkit;

import org.jspecify.annotations.NullMarked;

/**
 * Test support for dlock: real servers (an in-process ZooKeeper, ZooKeeper in a separate JVM),
 * child JVMs to kill or pause, and checkers for mutual exclusion and fencing.
 *
 * <p>Every server listens on 127.0.0.1 only, on a free port, and every process started here is
 * recorded by pid and killed on {@code close()} or, as a last resort, by a JVM shutdown hook.
 * Nothing in this package is meant for production code.
 */
package io.dlock.testkit;

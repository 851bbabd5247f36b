/**
 * The backend SPI: what a backend module implements so that the engine in {@code io.dlock.core}
 * can drive it. Only what truly differs between coordination servers lives here: how to stand in
 * the queue, how a waiter learns it may proceed, where the fencing token comes from, how an entry is
 * removed and how the connection's health is reported. Reentrancy, ownership, deadlines,
 * interrupts, listeners and loss policy are the engine's.
 *
 * <p>Every call here is non-blocking: it returns a {@link java.util.concurrent.CompletionStage}
 * and never sees a user timeout. Implementations must be thread-safe.
 */
@NullMarked
package io.dlock.spi;

import org.jspecify.annotations.NullMarked;

/**
 * The engine every backend shares: reentrancy, ownership, waiting, deadlines, interrupts, lease
 * state, loss detection and listeners. Backends plug in through {@code io.dlock.spi}; the only
 * public type here is {@link io.dlock.core.LockEngine}, for backend modules.
 */
@NullMarked
package io.dlock.core;

import org.jspecify.annotations.NullMarked;

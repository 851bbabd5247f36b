/**
 * dlock's public API: {@link io.dlock.LockClient} connects to a coordination server and hands out
 * {@link io.dlock.DistributedLock}s whose grants are {@link io.dlock.Lease}s carrying a fencing
 * token.
 *
 * <p>Every type here is safe for use from any thread unless its javadoc says otherwise. Everything
 * dlock throws is unchecked, except {@link java.lang.InterruptedException} from blocking calls (see
 * {@link io.dlock.DistributedLockException}).
 */
@NullMarked
package io.dlock;

import org.jspecify.annotations.NullMarked;

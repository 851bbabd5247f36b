/**
 * Anchor workers for {@code dlock torture --library curator|redisson} (issue 17 item 6): Apache
 * Curator's {@code InterProcessMutex} and Redisson's {@code RLock} taken in the torture worker's own
 * loop and protocol ({@code TortureWorker.runAnchor} in dlock-cli), so that the torture can measure
 * how many stale writes their careful users accept without fencing, under the same faults as
 * dlock's. They live here because this module carries Curator's recipes and Redisson; dlock-cli's
 * distribution does not. Nothing here is API.
 */
@NullMarked
package io.dlock.benchmarks.torture;

import org.jspecify.annotations.NullMarked;

/**
 * Internal: no compatibility guarantee; do not use.
 *
 * <p>The machinery behind {@code dlock torture}: a {@link io.dlock.cli.internal.torture.BackendTarget}
 * per backend (start the server, the client URI through a fault proxy, server faults, leftovers),
 * the {@link io.dlock.cli.internal.torture.TortureWorker} main class run in child JVMs, the {@link
 * io.dlock.cli.internal.torture.TortureRun} that schedules faults and measures recovery, and the
 * {@link io.dlock.cli.internal.torture.TortureResult} it renders as a table and a JSON line.
 */
@NullMarked
package io.dlock.cli.internal.torture;

import org.jspecify.annotations.NullMarked;

/**
 * Internal: no compatibility guarantee; do not use.
 *
 * <p>The machinery behind {@code dlock demo}: the in-process {@link
 * io.dlock.cli.internal.StockServer} that plays the protected resource, the {@link
 * io.dlock.cli.internal.DemoWorker} main class run in child JVMs, and the {@link
 * io.dlock.cli.internal.OversellDemo} that drives the four rounds.
 */
@NullMarked
package io.dlock.cli.internal;

import org.jspecify.annotations.NullMarked;

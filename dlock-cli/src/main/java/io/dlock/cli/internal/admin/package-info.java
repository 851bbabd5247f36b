/**
 * Internal: no compatibility guarantee; do not use.
 *
 * <p>The machinery behind {@code dlock inspect}, {@code dlock release --force} and {@code dlock
 * watch}: opening a backend's {@link io.dlock.spi.LockInspector} from a URI, the table and JSON
 * renderings of its snapshots, and the events a watch derives from consecutive snapshots.
 */
@NullMarked
package io.dlock.cli.internal.admin;

import org.jspecify.annotations.NullMarked;

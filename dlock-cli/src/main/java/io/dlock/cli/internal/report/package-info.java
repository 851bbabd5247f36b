/**
 * Internal: no compatibility guarantee; do not use.
 *
 * <p>The self-contained HTML reports that {@code dlock torture} and {@code dlock demo} write: a
 * {@link io.dlock.cli.internal.report.Timeline} drawn as SVG by our own code (no script, no font,
 * no external resource), and the page around it ({@link io.dlock.cli.internal.report.Html}).
 */
@NullMarked
package io.dlock.cli.internal.report;

import org.jspecify.annotations.NullMarked;

/** Tests of the torture's anchor workers. */
@NullMarked
package io.dlock.benchmarks.torture;

import org.jspecify.annotations.NullMarked;

/**
 * dlock's benchmarks: JMH microbenchmarks of the engine's hot paths ({@link
 * io.dlock.benchmarks.ReentrantBenchmark}, {@link io.dlock.benchmarks.LeaseBenchmark}, {@link
 * io.dlock.benchmarks.NameBenchmark}) and the side-by-side runner {@link
 * io.dlock.benchmarks.BenchCommand}, which starts real servers and measures dlock against Apache
 * Curator, Redisson and the bare protocol of each server, interleaved in one run.
 *
 * <p>Every competitor is one adapter behind {@link io.dlock.benchmarks.BenchLock}, chosen by the
 * {@link io.dlock.benchmarks.LockImpl} enum (Caffeine's benchmark layout). Nothing here is API.
 */
@NullMarked
package io.dlock.benchmarks;

import org.jspecify.annotations.NullMarked;

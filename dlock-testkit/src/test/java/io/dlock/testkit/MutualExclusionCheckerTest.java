package io.dlock.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import org.junit.jupiter.api.Test;

class MutualExclusionCheckerTest {

    @Test
    void enter_sequentialCallers_noViolation() {
        MutualExclusionChecker checker = new MutualExclusionChecker();
        checker.enter("a");
        checker.exit("a");
        checker.enter("b");
        checker.exit("b");
        assertThat(checker.entries()).isEqualTo(2);
        assertThat(checker.maxConcurrent()).isEqualTo(1);
        assertThat(checker.violations()).isZero();
        assertThat(checker.inside()).isZero();
        assertThat(checker.firstViolation()).isEmpty();
    }

    @Test
    void enter_overlappingCallers_countsViolationAndNamesThem() {
        MutualExclusionChecker checker = new MutualExclusionChecker();
        checker.enter("a");
        checker.enter("b");
        checker.enter("c");
        assertThat(checker.maxConcurrent()).isEqualTo(3);
        assertThat(checker.violations()).isEqualTo(2);
        assertThat(checker.firstViolation())
                .hasValueSatisfying(
                        text -> assertThat(text).startsWith("b entered").contains("a=1"));
        checker.exit("b");
        assertThat(checker.inside()).isEqualTo(2);
    }

    @Test
    void exit_withoutEnter_throwsAndChangesNothing() {
        MutualExclusionChecker checker = new MutualExclusionChecker();
        checker.enter("a");
        assertThatThrownBy(() -> checker.exit("b"))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("'b'");
        assertThat(checker.inside()).isEqualTo(1);
    }

    @Test
    void incrementUnsafely_underLock_countsEveryIncrement() throws Exception {
        MutualExclusionChecker checker = new MutualExclusionChecker();
        ReentrantLock lock = new ReentrantLock();
        runThreads(4, 20_000, name -> {
            lock.lock();
            try {
                checker.enter(name);
                checker.incrementUnsafely();
                checker.exit(name);
            } finally {
                lock.unlock();
            }
        });
        assertThat(checker.counter()).isEqualTo(80_000);
        assertThat(checker.violations()).isZero();
        assertThat(checker.maxConcurrent()).isEqualTo(1);
    }

    @Test
    void incrementUnsafely_withoutLock_losesIncrementsAndSeesViolations() throws Exception {
        // Overlap is a matter of scheduling, so allow several rounds before calling it a bug.
        boolean lost = false;
        MutualExclusionChecker checker = null;
        for (int round = 0; round < 20 && !lost; round++) {
            MutualExclusionChecker c = new MutualExclusionChecker();
            runThreads(4, 50_000, name -> {
                c.enter(name);
                c.incrementUnsafely();
                c.exit(name);
            });
            lost = c.counter() < 200_000;
            checker = c;
        }
        assertThat(lost)
                .as("unsynchronized increments never lost an update in 20 rounds")
                .isTrue();
        assertThat(checker.violations()).isPositive();
        assertThat(checker.maxConcurrent()).isGreaterThan(1);
    }

    private interface Step {
        void run(String name) throws Exception;
    }

    private static void runThreads(int threads, int iterations, Step step) throws Exception {
        CyclicBarrier start = new CyclicBarrier(threads);
        List<Thread> started = new ArrayList<>();
        List<Throwable> errors = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            String name = "t" + t;
            Thread thread = new Thread(() -> {
                try {
                    start.await(10, TimeUnit.SECONDS);
                    for (int i = 0; i < iterations; i++) {
                        step.run(name);
                    }
                } catch (Throwable e) {
                    synchronized (errors) {
                        errors.add(e);
                    }
                }
            });
            thread.start();
            started.add(thread);
        }
        for (Thread thread : started) {
            thread.join(TimeUnit.SECONDS.toMillis(30));
            assertThat(thread.isAlive()).as("worker still running after 30 s").isFalse();
        }
        assertThat(errors).isEmpty();
    }
}

package io.dlock.spring.boot.annotation;

import java.util.Set;

/**
 * Applies {@link DistributedLockInterceptor} to methods annotated with
 * {@link DistributedLock @DistributedLock} or {@link ScheduledLock @ScheduledLock}; created by the
 * auto-configuration. Matching parses each annotation, so its errors fail the bean's creation.
 *
 * <p>Thread-safety: safe from any thread.
 */
public final class DistributedLockAdvisor extends AnnotationAdvisor {
    private static final long serialVersionUID = 1L;

    /**
     * Creates the advisor.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @param interceptor the aspect
     */
    public DistributedLockAdvisor(DistributedLockInterceptor interceptor) {
        super(interceptor, Set.of(DistributedLock.class, ScheduledLock.class), interceptor::matches);
    }
}

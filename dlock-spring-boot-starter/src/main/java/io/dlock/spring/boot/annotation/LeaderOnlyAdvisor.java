package io.dlock.spring.boot.annotation;

import java.util.Set;

/**
 * Applies {@link LeaderOnlyInterceptor} to methods annotated with {@link LeaderOnly @LeaderOnly};
 * created by the auto-configuration. Matching registers each method's election and checks its
 * annotation, so its errors fail the bean's creation.
 *
 * <p>Thread-safety: safe from any thread.
 */
public final class LeaderOnlyAdvisor extends AnnotationAdvisor {
    private static final long serialVersionUID = 1L;

    /**
     * Creates the advisor.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @param interceptor the aspect
     */
    public LeaderOnlyAdvisor(LeaderOnlyInterceptor interceptor) {
        super(interceptor, Set.of(LeaderOnly.class), interceptor::matches);
    }
}

package io.dlock.spring.boot.annotation;

import java.lang.reflect.Method;
import org.aopalliance.aop.Advice;
import org.springframework.aop.ClassFilter;
import org.springframework.aop.Pointcut;
import org.springframework.aop.support.AbstractPointcutAdvisor;
import org.springframework.aop.support.StaticMethodMatcherPointcut;
import org.springframework.core.annotation.AnnotationUtils;

/**
 * Applies {@link LeaderOnlyInterceptor} to methods annotated with {@link LeaderOnly @LeaderOnly};
 * created by the auto-configuration. Matching registers each method's election and checks its
 * annotation, so its errors fail the bean's creation.
 *
 * <p>Thread-safety: safe from any thread.
 */
public final class LeaderOnlyAdvisor extends AbstractPointcutAdvisor {
    private static final long serialVersionUID = 1L;

    private final transient LeaderOnlyInterceptor interceptor;
    private final transient Pointcut pointcut;

    /**
     * Creates the advisor.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @param interceptor the aspect
     */
    public LeaderOnlyAdvisor(LeaderOnlyInterceptor interceptor) {
        this.interceptor = interceptor;
        this.pointcut = new StaticMethodMatcherPointcut() {
            {
                setClassFilter(new ClassFilter() {
                    @Override
                    public boolean matches(Class<?> clazz) {
                        return AnnotationUtils.isCandidateClass(clazz, LeaderOnly.class);
                    }
                });
            }

            @Override
            public boolean matches(Method method, Class<?> targetClass) {
                return interceptor.matches(method, targetClass);
            }
        };
    }

    @Override
    public Pointcut getPointcut() {
        return pointcut;
    }

    @Override
    public Advice getAdvice() {
        return interceptor;
    }
}

package io.dlock.spring.boot.annotation;

import java.lang.reflect.Method;
import java.util.Set;
import org.aopalliance.aop.Advice;
import org.springframework.aop.ClassFilter;
import org.springframework.aop.Pointcut;
import org.springframework.aop.support.AbstractPointcutAdvisor;
import org.springframework.aop.support.StaticMethodMatcherPointcut;
import org.springframework.core.annotation.AnnotationUtils;

/**
 * Applies {@link DistributedLockInterceptor} to methods annotated with
 * {@link DistributedLock @DistributedLock} or {@link ScheduledLock @ScheduledLock}; created by the
 * auto-configuration. Matching parses each annotation, so its errors fail the bean's creation.
 *
 * <p>Thread-safety: safe from any thread.
 */
public final class DistributedLockAdvisor extends AbstractPointcutAdvisor {
    private static final long serialVersionUID = 1L;
    private static final Set<Class<? extends java.lang.annotation.Annotation>> ANNOTATIONS =
            Set.of(DistributedLock.class, ScheduledLock.class);

    private final transient DistributedLockInterceptor interceptor;
    private final transient Pointcut pointcut;

    /**
     * Creates the advisor.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @param interceptor the aspect
     */
    public DistributedLockAdvisor(DistributedLockInterceptor interceptor) {
        this.interceptor = interceptor;
        this.pointcut = new StaticMethodMatcherPointcut() {
            {
                setClassFilter(new ClassFilter() {
                    @Override
                    public boolean matches(Class<?> clazz) {
                        return AnnotationUtils.isCandidateClass(clazz, ANNOTATIONS);
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

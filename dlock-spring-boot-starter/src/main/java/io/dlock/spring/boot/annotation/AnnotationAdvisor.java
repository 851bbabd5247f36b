package io.dlock.spring.boot.annotation;

import java.lang.annotation.Annotation;
import java.lang.reflect.Method;
import java.util.Set;
import java.util.function.BiPredicate;
import org.aopalliance.aop.Advice;
import org.springframework.aop.ClassFilter;
import org.springframework.aop.Pointcut;
import org.springframework.aop.support.AbstractPointcutAdvisor;
import org.springframework.aop.support.StaticMethodMatcherPointcut;
import org.springframework.core.annotation.AnnotationUtils;

/**
 * An advisor for the methods of classes that may carry one of {@code annotations}, as the
 * interceptor's own matcher decides (it parses the annotation, so its errors fail the bean's
 * creation). The base of the starter's advisors.
 *
 * <p>Thread-safety: safe from any thread.
 */
abstract class AnnotationAdvisor extends AbstractPointcutAdvisor {
    private static final long serialVersionUID = 1L;

    private final transient Advice advice;
    private final transient Pointcut pointcut;

    AnnotationAdvisor(
            Advice advice, Set<Class<? extends Annotation>> annotations, BiPredicate<Method, Class<?>> matcher) {
        this.advice = advice;
        this.pointcut = new StaticMethodMatcherPointcut() {
            {
                setClassFilter(new ClassFilter() {
                    @Override
                    public boolean matches(Class<?> clazz) {
                        return AnnotationUtils.isCandidateClass(clazz, annotations);
                    }
                });
            }

            @Override
            public boolean matches(Method method, Class<?> targetClass) {
                return matcher.test(method, targetClass);
            }
        };
    }

    @Override
    public Pointcut getPointcut() {
        return pointcut;
    }

    @Override
    public Advice getAdvice() {
        return advice;
    }
}

package io.dlock.spring.boot.annotation;

import io.dlock.Lease;
import io.dlock.core.LockNames;
import io.dlock.spring.boot.leader.LeaderElections;
import java.lang.reflect.Method;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.aop.support.AopUtils;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.util.ClassUtils;
import org.springframework.util.StringValueResolver;

/**
 * The aspect of {@link LeaderOnly @LeaderOnly}: a call proceeds, with the term bound to the thread
 * ({@link LeaderElections#currentTerm()}), only while this instance leads the election; otherwise
 * it is skipped. Matching resolves the election's name, checks it and the method's return type, and
 * registers the election so that it joins when the context starts.
 *
 * <p>Thread-safety: safe from any thread; names are cached per method.
 */
public final class LeaderOnlyInterceptor implements MethodInterceptor {
    private static final Logger log = LoggerFactory.getLogger(LeaderOnlyInterceptor.class);
    /** The longest election name: its lock is {@code election:} + the name. */
    private static final int MAX_NAME = LockNames.MAX_LENGTH - LockNames.ELECTION_PREFIX.length();

    private final LeaderElections elections;
    private final StringValueResolver values;
    private final Map<Method, String> names = new ConcurrentHashMap<>();

    /**
     * Creates the aspect.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @param elections where the elections run
     * @param values resolves {@code ${...}} and {@code #{...}} in names
     */
    public LeaderOnlyInterceptor(LeaderElections elections, StringValueResolver values) {
        this.elections = elections;
        this.values = values;
    }

    /**
     * Whether {@code method} (on {@code targetClass}) carries {@code @LeaderOnly}; resolves, checks
     * and registers its election.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: {@link
     * IllegalStateException} naming the method for a blank or invalid name or a primitive return
     * type (which a skipped call could not return).
     *
     * @param method the method
     * @param targetClass the bean's class, or {@code null}
     * @return whether the aspect applies
     * @throws IllegalStateException on an annotation error
     */
    public boolean matches(Method method, @Nullable Class<?> targetClass) {
        return name(method, targetClass) != null;
    }

    private @Nullable String name(Method method, @Nullable Class<?> targetClass) {
        Method specific = ClassUtils.getMostSpecificMethod(method, targetClass);
        String cached = names.get(specific);
        if (cached != null) {
            return cached;
        }
        LeaderOnly annotation = AnnotatedElementUtils.findMergedAnnotation(specific, LeaderOnly.class);
        if (annotation == null) {
            return null;
        }
        Class<?> returns = specific.getReturnType();
        if (returns.isPrimitive() && returns != void.class) {
            throw new IllegalStateException("@LeaderOnly on " + specific + ": a skipped call cannot return a " + returns
                    + "; return void, a reference type or Optional");
        }
        String name;
        try {
            name = Objects.requireNonNullElse(values.resolveStringValue(annotation.value()), "");
        } catch (RuntimeException e) {
            throw new IllegalStateException("@LeaderOnly on " + specific + ": " + e.getMessage(), e);
        }
        try {
            LockNames.validate(name);
            if (name.length() > MAX_NAME) {
                throw new IllegalArgumentException(
                        "election name is " + name.length() + " characters long; at most " + MAX_NAME + " are allowed");
            }
        } catch (IllegalArgumentException e) {
            throw new IllegalStateException("@LeaderOnly on " + specific + ": " + e.getMessage(), e);
        }
        elections.register(name);
        names.put(specific, name);
        return name;
    }

    @Override
    public @Nullable Object invoke(MethodInvocation inv) throws Throwable {
        Object target = inv.getThis();
        String name = name(inv.getMethod(), target == null ? null : AopUtils.getTargetClass(target));
        if (name == null) {
            return inv.proceed();
        }
        Optional<Lease> term = elections.term(name);
        if (term.isEmpty()) {
            log.debug(
                    "[election={}] {} skipped: this instance does not lead",
                    name,
                    inv.getMethod().getName());
            return skipped(inv.getMethod().getReturnType());
        }
        Runnable unbind = LeaderElections.bind(term.get());
        try {
            return inv.proceed();
        } finally {
            unbind.run();
        }
    }

    private static @Nullable Object skipped(Class<?> returns) {
        if (returns == Optional.class) {
            return Optional.empty();
        }
        if (returns == CompletableFuture.class || returns == CompletionStage.class) {
            return CompletableFuture.completedFuture(null);
        }
        return null;
    }
}

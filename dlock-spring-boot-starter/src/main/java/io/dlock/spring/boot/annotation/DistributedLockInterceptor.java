package io.dlock.spring.boot.annotation;

import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.LockInterruptedException;
import io.dlock.LockTimeoutException;
import java.lang.reflect.Method;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.aop.support.AopUtils;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.context.expression.BeanFactoryResolver;
import org.springframework.context.expression.MethodBasedEvaluationContext;
import org.springframework.core.DefaultParameterNameDiscoverer;
import org.springframework.core.MethodClassKey;
import org.springframework.core.ParameterNameDiscoverer;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.expression.Expression;
import org.springframework.util.StringValueResolver;

/**
 * The aspect behind {@link DistributedLock @DistributedLock} and {@link ScheduledLock @ScheduledLock};
 * created by the auto-configuration.
 *
 * <p>Concurrency: no monitor is held around a blocking call (virtual threads do not pin). The
 * per-thread lease stack is a {@link ThreadLocal}; the spec cache and {@link ActiveLocks} are
 * concurrent maps. One daemon scheduler thread performs deferred and bounded releases; it only
 * closes leases, which never run user code.
 *
 * <p>Failure: a lease that cannot be released (backend gone) is logged and left to the engine, whose
 * lease expiry or session end frees it on the server. An exception from the method is rethrown
 * unchanged after the release. An acquisition that fails for the backend ({@link
 * io.dlock.LockBackendException}) is rethrown as it is; for a {@code @ScheduledLock} it is also
 * logged once at WARN and counted ({@link ScheduledRunRecorder.Outcome#ERROR}), since the job's
 * caller is a scheduler.
 *
 * <p>Thread-safety: safe from any thread.
 */
public final class DistributedLockInterceptor implements MethodInterceptor, AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(DistributedLockInterceptor.class);
    /**
     * acquireAsync needs a bound: ten years. (Duration.ofNanos(Long.MAX_VALUE) overflows the engine's
     * deadline and times out at once.)
     */
    private static final Duration FOREVER = Duration.ofDays(3650);

    private final Supplier<LockClient> client;
    private final ActiveLocks active;
    private final @Nullable BeanFactory beanFactory;
    private final ParameterNameDiscoverer names = new DefaultParameterNameDiscoverer();
    private final Map<MethodClassKey, LockSpec> specs = new ConcurrentHashMap<>();
    private final ScheduledExecutorService releaser;
    private final StringValueResolver values;
    private final @Nullable Duration defaultLockAtMostFor;
    private final @Nullable Duration defaultLockAtLeastFor;
    private final Supplier<ScheduledRunRecorder> recorder;
    private volatile @Nullable String backendName;
    private volatile @Nullable LockClient resolved;

    /**
     * What the aspect takes from the application's configuration.
     *
     * @param values resolves {@code ${...}} placeholders and {@code #{...}} expressions in annotation
     *     attributes; an unresolvable one must throw
     * @param defaultLockAtMostFor {@code lockAtMostFor} of {@code @ScheduledLock}s that leave it
     *     empty, or null to require it
     * @param defaultLockAtLeastFor {@code lockAtLeastFor} of {@code @ScheduledLock}s that leave it
     *     empty, or null for zero
     * @param recorder supplies, at each scheduled run, where its outcome goes
     */
    public record Settings(
            StringValueResolver values,
            @Nullable Duration defaultLockAtMostFor,
            @Nullable Duration defaultLockAtLeastFor,
            Supplier<ScheduledRunRecorder> recorder) {

        /**
         * No placeholder resolution (attributes are taken as written), no scheduled defaults, no
         * recording.
         *
         * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
         *
         * @return the settings
         */
        public static Settings defaults() {
            return new Settings(text -> text, null, null, () -> ScheduledRunRecorder.NONE);
        }
    }

    /**
     * Creates the aspect.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @param client supplies the lock client when the first annotated method is called (or validated)
     * @param active where held and waiting calls are tracked
     * @param beanFactory resolves {@code @bean} references in keys; may be {@code null}
     */
    public DistributedLockInterceptor(
            Supplier<LockClient> client, ActiveLocks active, @Nullable BeanFactory beanFactory) {
        this(client, active, beanFactory, Settings.defaults());
    }

    /**
     * Creates the aspect with the application's settings.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @param client supplies the lock client when the first annotated method is called (or validated)
     * @param active where held and waiting calls are tracked
     * @param beanFactory resolves {@code @bean} references in keys; may be {@code null}
     * @param settings placeholders, scheduled defaults and the outcome recorder
     */
    public DistributedLockInterceptor(
            Supplier<LockClient> client, ActiveLocks active, @Nullable BeanFactory beanFactory, Settings settings) {
        this.values = settings.values();
        this.defaultLockAtMostFor = settings.defaultLockAtMostFor();
        this.defaultLockAtLeastFor = settings.defaultLockAtLeastFor();
        this.recorder = settings.recorder();
        this.client = client;
        this.active = active;
        this.beanFactory = beanFactory;
        ScheduledThreadPoolExecutor pool = new ScheduledThreadPoolExecutor(1, r -> {
            Thread t = new Thread(r, "dlock-spring-releaser");
            t.setDaemon(true);
            return t;
        });
        pool.setRemoveOnCancelPolicy(true);
        pool.setExecuteExistingDelayedTasksAfterShutdownPolicy(false);
        this.releaser = pool;
    }

    /**
     * Whether {@code method} (on {@code targetClass}) is annotated, parsing and caching its spec.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure:
     * {@link IllegalStateException} naming the method for a blank or unparsable key, a malformed
     * duration, or an annotation that cannot apply to the method's signature.
     *
     * @param method the method
     * @param targetClass the bean's class, or {@code null}
     * @return whether the aspect applies
     * @throws IllegalStateException on an annotation error
     */
    public boolean matches(Method method, Class<?> targetClass) {
        return spec(method, targetClass) != null;
    }

    /**
     * Checks the constant lock names of every method parsed so far against the client's name
     * rules, and that a client exists.
     *
     * <p>Blocking: never (no server call). Thread-safety: safe from any thread. On failure:
     * {@link IllegalStateException} naming the method.
     *
     * @throws IllegalStateException if a constant name is invalid or no client is available
     */
    public void validate() {
        if (specs.isEmpty()) {
            return;
        }
        LockClient c = client();
        for (LockSpec s : specs.values()) {
            if (s.constantName() != null) {
                try {
                    c.lock(s.constantName());
                } catch (IllegalArgumentException e) {
                    throw new IllegalStateException("lock annotation on " + s.method() + ": " + e.getMessage(), e);
                }
            }
        }
    }

    @Override
    public @Nullable Object invoke(MethodInvocation inv) throws Throwable {
        Object target = inv.getThis();
        LockSpec spec = spec(inv.getMethod(), target == null ? null : AopUtils.getTargetClass(target));
        if (spec == null) {
            return inv.proceed();
        }
        String name = spec.constantName() != null ? spec.constantName() : evaluate(spec, inv);
        DistributedLocks.Frame outer = DistributedLocks.find(name);
        if (outer != null) {
            // Reentrant call through the proxy on the same thread: share the outer lease.
            return runUnder(inv, spec, name, outer.lease());
        }
        switch (spec.kind()) {
            case BLOCKING:
                return invokeBlocking(inv, spec, name);
            case OWNED:
                return invokeOwned(inv, spec, name);
            default:
                return invokeAsync(inv, spec, name);
        }
    }

    private @Nullable Object invokeBlocking(MethodInvocation inv, LockSpec spec, String name) throws Throwable {
        io.dlock.DistributedLock lock = lockFor(name, spec);
        long id = active.waiting(name, spec.method());
        Lease lease;
        try {
            if (spec.waitTime() == null) {
                lease = lock.acquire();
            } else {
                Optional<Lease> got = lock.tryAcquire(spec.waitTime());
                if (got.isEmpty()) {
                    active.remove(id);
                    return timedOut(spec, name);
                }
                lease = got.get();
            }
        } catch (InterruptedException e) {
            active.remove(id);
            Thread.currentThread().interrupt();
            throw new LockInterruptedException(name, backend(), e);
        } catch (RuntimeException | Error e) {
            active.remove(id);
            throw e;
        }
        active.held(id, lease.fencingToken());
        try {
            return runUnder(inv, spec, name, lease);
        } finally {
            active.remove(id);
            lease.close();
        }
    }

    private @Nullable Object invokeOwned(MethodInvocation inv, LockSpec spec, String name) throws Throwable {
        long start = System.nanoTime();
        io.dlock.DistributedLock lock = lockFor(name, spec);
        long id = active.waiting(name, spec.method());
        CompletableFuture<Lease> pending;
        try {
            pending = lock.acquireAsync(spec.waitTime() == null ? FOREVER : spec.waitTime());
        } catch (RuntimeException e) {
            active.remove(id);
            throw notRun(spec, name, e);
        }
        Lease lease;
        try {
            lease = pending.get();
        } catch (InterruptedException e) {
            pending.cancel(false); // abandons the attempt; nothing stays queued
            active.remove(id);
            Thread.currentThread().interrupt();
            throw new LockInterruptedException(name, backend(), e);
        } catch (ExecutionException e) {
            active.remove(id);
            Throwable cause = e.getCause();
            if (cause instanceof LockTimeoutException timeout) {
                if (spec.scheduled()) {
                    record(name, ScheduledRunRecorder.Outcome.SKIPPED);
                }
                return timedOut(spec, timeout);
            }
            throw notRun(spec, name, cause == null ? e : cause);
        }
        if (spec.scheduled()) {
            record(name, ScheduledRunRecorder.Outcome.RAN);
        }
        active.held(id, lease.fencingToken());
        ScheduledFuture<?> atMost = releaser.schedule(
                () -> release(lease, id),
                remaining(Objects.requireNonNull(spec.holdAtMost(), "holdAtMost"), start),
                TimeUnit.NANOSECONDS);
        try {
            return runUnder(inv, spec, name, lease);
        } finally {
            atMost.cancel(false);
            long keep = remaining(Objects.requireNonNull(spec.holdAtLeast(), "holdAtLeast"), start);
            if (keep > 0) {
                releaser.schedule(() -> release(lease, id), keep, TimeUnit.NANOSECONDS);
            } else {
                release(lease, id);
            }
        }
    }

    private Object invokeAsync(MethodInvocation inv, LockSpec spec, String name) {
        io.dlock.DistributedLock lock = lockFor(name, spec);
        long id = active.waiting(name, spec.method());
        CompletableFuture<Lease> pending = lock.acquireAsync(spec.waitTime() == null ? FOREVER : spec.waitTime());
        CompletableFuture<Object> result = new CompletableFuture<>();
        // A caller that gives up on the result gives up on the lock too.
        result.whenComplete((v, e) -> {
            if (e instanceof CancellationException) {
                pending.cancel(false);
            }
        });
        pending.whenComplete((lease, err) -> {
            if (err != null) {
                active.remove(id);
                Throwable cause = err instanceof CompletionException && err.getCause() != null ? err.getCause() : err;
                if (cause instanceof LockTimeoutException && spec.onTimeout() == OnTimeout.SKIP) {
                    result.complete(null);
                } else {
                    result.completeExceptionally(cause);
                }
                return;
            }
            active.held(id, lease.fencingToken());
            Object stage;
            try {
                stage = runUnder(inv, spec, name, lease);
            } catch (Throwable t) {
                release(lease, id);
                result.completeExceptionally(t);
                return;
            }
            if (stage == null) {
                release(lease, id);
                result.complete(null);
                return;
            }
            ((CompletionStage<?>) stage).whenComplete((v, e) -> {
                release(lease, id);
                if (e != null) {
                    result.completeExceptionally(
                            e instanceof CompletionException && e.getCause() != null ? e.getCause() : e);
                } else {
                    result.complete(v);
                }
            });
        });
        return result;
    }

    private @Nullable Object runUnder(MethodInvocation inv, LockSpec spec, String name, Lease lease) throws Throwable {
        if (spec.leaseParameter() >= 0) {
            inv.getArguments()[spec.leaseParameter()] = lease;
        }
        ArrayDeque<DistributedLocks.Frame> stack = DistributedLocks.push(name, lease);
        try {
            return inv.proceed();
        } finally {
            DistributedLocks.pop(stack);
        }
    }

    private void release(Lease lease, long id) {
        active.remove(id);
        try {
            lease.close();
        } catch (RuntimeException e) {
            log.warn(
                    "[lock={}] release failed; the engine frees it when the lease expires: {}",
                    lease.lockName(),
                    e.toString());
        }
    }

    private @Nullable Object timedOut(LockSpec spec, String name) {
        if (spec.onTimeout() == OnTimeout.SKIP) {
            log.debug("[lock={}] not acquired within {}: {} skipped", name, spec.waitTime(), spec.method());
            return spec.skipped();
        }
        throw new LockTimeoutException(name, backend(), Objects.requireNonNull(spec.waitTime(), "waitTime"));
    }

    private @Nullable Object timedOut(LockSpec spec, LockTimeoutException e) {
        if (spec.onTimeout() == OnTimeout.SKIP) {
            log.debug("[lock={}] not acquired: {} skipped", e.lockName(), spec.method());
            return spec.skipped();
        }
        throw e;
    }

    /**
     * A lock attempt that failed other than by timing out. A scheduled job's failure is counted and
     * logged once here (its scheduler's ErrorHandler sees it next); a {@code @DistributedLock}
     * caller gets it unlogged, to handle as it sees fit.
     */
    private Throwable notRun(LockSpec spec, String name, Throwable cause) {
        if (spec.scheduled()) {
            record(name, ScheduledRunRecorder.Outcome.ERROR);
            log.warn("[lock={}] scheduled job {} not run: {}", name, spec.method(), cause.toString());
        }
        return cause;
    }

    private void record(String name, ScheduledRunRecorder.Outcome outcome) {
        try {
            ScheduledRunRecorder r = recorder.get();
            (r == null ? ScheduledRunRecorder.NONE : r).record(backend(), name, outcome);
        } catch (RuntimeException e) {
            log.debug("[lock={}] scheduled run outcome {} not recorded: {}", name, outcome, e.toString());
        }
    }

    private static long remaining(Duration bound, long start) {
        return bound.toNanos() - (System.nanoTime() - start);
    }

    private io.dlock.DistributedLock lockFor(String name, LockSpec spec) {
        try {
            return client().lock(name);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("lock annotation on " + spec.method() + ": " + e.getMessage(), e);
        }
    }

    private String evaluate(LockSpec spec, MethodInvocation inv) {
        MethodBasedEvaluationContext ctx =
                new MethodBasedEvaluationContext(inv.getThis(), inv.getMethod(), inv.getArguments(), names);
        if (beanFactory != null) {
            ctx.setBeanResolver(new BeanFactoryResolver(beanFactory));
        }
        Expression key = Objects.requireNonNull(spec.key(), "key"); // a constant name is never evaluated
        Object value;
        try {
            value = key.getValue(ctx);
        } catch (RuntimeException e) {
            throw new IllegalArgumentException(
                    "@DistributedLock on " + spec.method() + ": key \"" + key.getExpressionString() + "\" failed: "
                            + e.getMessage(),
                    e);
        }
        String name = value == null ? null : value.toString();
        if (name == null || name.isEmpty()) {
            throw new IllegalArgumentException("@DistributedLock on " + spec.method() + ": key \""
                    + spec.key().getExpressionString() + "\" gave " + (name == null ? "null" : "an empty name"));
        }
        return name;
    }

    private @Nullable LockSpec spec(Method method, @Nullable Class<?> targetClass) {
        MethodClassKey key = new MethodClassKey(method, targetClass);
        LockSpec s = specs.get(key);
        if (s != null || specs.containsKey(key)) {
            return s;
        }
        Method specific = AopUtils.getMostSpecificMethod(method, targetClass);
        DistributedLock dl = AnnotatedElementUtils.findMergedAnnotation(specific, DistributedLock.class);
        ScheduledLock sl = AnnotatedElementUtils.findMergedAnnotation(specific, ScheduledLock.class);
        if (dl != null && sl != null) {
            throw new IllegalStateException(
                    LockSpec.describe(specific) + ": @DistributedLock and @ScheduledLock on one method; choose one");
        }
        s = dl != null
                ? LockSpec.parse(specific, dl, values)
                : sl != null ? LockSpec.parse(specific, sl, values, defaultLockAtMostFor, defaultLockAtLeastFor) : null;
        if (s != null) {
            specs.put(key, s);
        }
        return s;
    }

    private LockClient client() {
        LockClient c = resolved;
        if (c != null) {
            return c;
        }
        c = client.get();
        resolved = c;
        if (c == null) {
            throw new IllegalStateException("@DistributedLock/@ScheduledLock need a LockClient: set dlock.uri"
                    + " or define a LockClient bean");
        }
        return c;
    }

    private String backend() {
        String b = backendName;
        if (b == null) {
            b = backendNameOf(client());
            backendName = b;
        }
        return b;
    }

    /**
     * The backend's name of a client, as its {@code toString()} gives it ({@code "LockClient[redis,
     * OPEN, 0 live]"}): the API has no accessor.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: {@code "unknown"} for a
     * client whose text does not have that form.
     *
     * @param c the client
     * @return the backend's name, for example {@code redis}
     */
    public static String backendNameOf(LockClient c) {
        String s = String.valueOf(c);
        int open = s.indexOf('[');
        int comma = s.indexOf(',', open + 1);
        return s.startsWith("LockClient[") && comma > open ? s.substring(open + 1, comma) : "unknown";
    }

    /**
     * Stops the release scheduler; leases whose release was deferred stay held until the client
     * closes (which releases every lease) or their lease runs out.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     */
    @Override
    public void close() {
        releaser.shutdownNow();
    }
}

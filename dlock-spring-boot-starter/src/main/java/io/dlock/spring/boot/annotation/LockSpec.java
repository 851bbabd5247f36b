package io.dlock.spring.boot.annotation;

import io.dlock.Lease;
import java.lang.reflect.Method;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletionStage;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.convert.DurationStyle;
import org.springframework.expression.Expression;
import org.springframework.expression.ParseException;
import org.springframework.expression.spel.ast.Literal;
import org.springframework.expression.spel.standard.SpelExpression;
import org.springframework.expression.spel.standard.SpelExpressionParser;
import org.springframework.util.StringValueResolver;

/**
 * One annotated method, parsed once when its bean is proxied: every error that can be known before a
 * call is thrown from {@link #parse} with the method's name in the message. Durations (and a
 * {@code @ScheduledLock}'s name) are resolved against the Environment first ({@code ${...}}, and
 * {@code #{...}} SpEL), as ShedLock resolves its attributes.
 */
record LockSpec(
        String method,
        Kind kind,
        @Nullable String constantName,
        @Nullable Expression key,
        @Nullable Duration waitTime,
        @Nullable Duration holdAtMost,
        @Nullable Duration holdAtLeast,
        OnTimeout onTimeout,
        int leaseParameter,
        Result result,
        boolean scheduled) {

    enum Kind {
        /** Blocking acquire on the calling thread, released when the method returns (the fast path). */
        BLOCKING,
        /** An own lease ({@code acquireAsync}) that a scheduler may release: hold bounds, scheduled jobs. */
        OWNED,
        /** The method returns a stage; the lease is released when the stage completes. */
        ASYNC
    }

    enum Result {
        VOID,
        OBJECT,
        OPTIONAL,
        PRIMITIVE
    }

    static final SpelExpressionParser PARSER = new SpelExpressionParser();

    static LockSpec parse(Method m, DistributedLock a, StringValueResolver values) {
        String where = describe(m);
        String keyText = a.key();
        if (keyText == null || keyText.isBlank()) {
            throw new IllegalStateException("@DistributedLock on " + where + ": key is empty; give a SpEL"
                    + " expression such as \"'order:' + #orderId\"");
        }
        Expression key;
        try {
            key = PARSER.parseExpression(keyText);
        } catch (ParseException e) {
            throw new IllegalStateException(
                    "@DistributedLock on " + where + ": key \"" + keyText + "\" is not a valid SpEL expression: "
                            + e.getMessage(),
                    e);
        }
        String constant = null;
        if (key instanceof SpelExpression spel && spel.getAST() instanceof Literal lit) {
            Object v = lit.getLiteralValue().getValue();
            constant = v == null ? null : v.toString();
            if (constant == null || constant.isEmpty()) {
                throw new IllegalStateException(
                        "@DistributedLock on " + where + ": key \"" + keyText + "\" is an empty lock name");
            }
        }
        String waitText = resolve(where, "@DistributedLock", "waitTime", a.waitTime(), values);
        String holdText = resolve(where, "@DistributedLock", "leaseTime", a.leaseTime(), values);
        Duration wait = duration(where, "@DistributedLock", "waitTime", waitText, true);
        Duration hold = duration(where, "@DistributedLock", "leaseTime", holdText, false);
        if (hold != null && hold.isZero()) {
            throw new IllegalStateException(
                    "@DistributedLock on " + where + ": leaseTime must be positive: " + holdText);
        }
        Result result = result(m);
        if (a.onTimeout() == OnTimeout.SKIP && result == Result.PRIMITIVE) {
            throw new IllegalStateException("@DistributedLock on " + where + ": onTimeout = SKIP needs a void or"
                    + " object return type to return null; " + m.getReturnType() + " cannot be null");
        }
        Kind kind = isAsync(m) ? Kind.ASYNC : hold != null ? Kind.OWNED : Kind.BLOCKING;
        return new LockSpec(
                where,
                kind,
                constant,
                constant == null ? key : null,
                wait,
                hold,
                Duration.ZERO,
                a.onTimeout(),
                leaseParameter(m),
                result,
                false);
    }

    /**
     * Parses a {@code @ScheduledLock}; its name and durations may hold {@code ${...}} placeholders
     * and {@code #{...}} expressions, resolved by {@code values}; empty durations take the {@code
     * dlock.scheduled.default-*} values.
     */
    static LockSpec parse(
            Method m,
            ScheduledLock a,
            StringValueResolver values,
            @Nullable Duration defaultAtMost,
            @Nullable Duration defaultAtLeast) {
        String where = describe(m);
        String name = resolve(where, "@ScheduledLock", "name", a.name(), values);
        if (name == null || name.isBlank()) {
            throw new IllegalStateException("@ScheduledLock on " + where + ": name is empty");
        }
        String atMostText = resolve(where, "@ScheduledLock", "lockAtMostFor", a.lockAtMostFor(), values);
        String atLeastText = resolve(where, "@ScheduledLock", "lockAtLeastFor", a.lockAtLeastFor(), values);
        Duration atMost = duration(where, "@ScheduledLock", "lockAtMostFor", atMostText, false);
        Duration atLeast = duration(where, "@ScheduledLock", "lockAtLeastFor", atLeastText, true);
        if (atMost == null) {
            if (defaultAtMost == null) {
                throw new IllegalStateException("@ScheduledLock on " + where + ": lockAtMostFor is empty and"
                        + " dlock.scheduled.default-lock-at-most-for is not set; give one of them");
            }
            atMost = defaultAtMost;
            atMostText = defaultAtMost + " (dlock.scheduled.default-lock-at-most-for)";
        }
        if (atMost.isNegative() || atMost.isZero()) {
            throw new IllegalStateException(
                    "@ScheduledLock on " + where + ": lockAtMostFor must be positive: '" + atMostText + "'");
        }
        if (atLeast == null) {
            atLeast = defaultAtLeast == null ? Duration.ZERO : defaultAtLeast;
            atLeastText =
                    defaultAtLeast == null ? "0s" : defaultAtLeast + " (dlock.scheduled.default-lock-at-least-for)";
        }
        if (atLeast.isNegative()) {
            throw new IllegalStateException(
                    "@ScheduledLock on " + where + ": lockAtLeastFor must not be negative: '" + atLeastText + "'");
        }
        if (atLeast.compareTo(atMost) > 0) {
            throw new IllegalStateException("@ScheduledLock on " + where + ": lockAtLeastFor " + atLeastText
                    + " exceeds lockAtMostFor " + atMostText);
        }
        Result result = result(m);
        if (result == Result.PRIMITIVE) {
            throw new IllegalStateException("@ScheduledLock on " + where + ": a skipped run returns null, so the"
                    + " method must return void or an object, not " + m.getReturnType());
        }
        if (isAsync(m)) {
            throw new IllegalStateException(
                    "@ScheduledLock on " + where + ": async scheduled jobs are not supported;" + " return void");
        }
        return new LockSpec(
                where,
                Kind.OWNED,
                name,
                null,
                Duration.ZERO,
                atMost,
                atLeast,
                OnTimeout.SKIP,
                leaseParameter(m),
                result,
                true);
    }

    /** Resolves placeholders and expressions in an attribute; an unresolvable one names the method. */
    private static @Nullable String resolve(
            String where, String annotation, String attribute, @Nullable String text, StringValueResolver values) {
        if (text == null || text.isEmpty() || (!text.contains("${") && !text.contains("#{"))) {
            return text;
        }
        try {
            return values.resolveStringValue(text);
        } catch (RuntimeException e) {
            throw new IllegalStateException(
                    annotation + " on " + where + ": " + attribute + " '" + text + "' cannot be resolved: "
                            + e.getMessage(),
                    e);
        }
    }

    private static @Nullable Duration duration(
            String where, String annotation, String attribute, @Nullable String text, boolean zeroOk) {
        if (text == null || text.isBlank()) {
            return null;
        }
        Duration d;
        try {
            d = DurationStyle.detectAndParse(text.trim());
        } catch (IllegalArgumentException e) {
            throw new IllegalStateException(
                    annotation + " on " + where + ": " + attribute + " '" + text
                            + "' is not a duration (write 500ms, 5s, 2m or PT5S)",
                    e);
        }
        if (d.isNegative() || (!zeroOk && d.isZero())) {
            throw new IllegalStateException(annotation + " on " + where + ": " + attribute + " must be "
                    + (zeroOk ? "zero or positive" : "positive") + ": '" + text + "'");
        }
        return d;
    }

    private static boolean isAsync(Method m) {
        return CompletionStage.class.isAssignableFrom(m.getReturnType());
    }

    private static Result result(Method m) {
        Class<?> r = m.getReturnType();
        if (r == void.class) {
            return Result.VOID;
        }
        if (r.isPrimitive()) {
            return Result.PRIMITIVE;
        }
        return r == Optional.class ? Result.OPTIONAL : Result.OBJECT;
    }

    private static int leaseParameter(Method m) {
        Class<?>[] types = m.getParameterTypes();
        for (int i = 0; i < types.length; i++) {
            if (types[i] == Lease.class) {
                return i;
            }
        }
        return -1;
    }

    static String describe(Method m) {
        return m.getDeclaringClass().getSimpleName() + "." + m.getName();
    }

    @Nullable
    Object skipped() {
        return result == Result.OPTIONAL ? Optional.empty() : null;
    }
}

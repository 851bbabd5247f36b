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

/**
 * One annotated method, parsed once when its bean is proxied: every error that can be known before a
 * call is thrown from {@link #parse} with the method's name in the message.
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
        Result result) {

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

    static LockSpec parse(Method m, DistributedLock a) {
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
        Duration wait = duration(where, "@DistributedLock", "waitTime", a.waitTime(), true);
        Duration hold = duration(where, "@DistributedLock", "leaseTime", a.leaseTime(), false);
        if (hold != null && hold.isZero()) {
            throw new IllegalStateException(
                    "@DistributedLock on " + where + ": leaseTime must be positive: " + a.leaseTime());
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
                result);
    }

    static LockSpec parse(Method m, ScheduledLock a) {
        String where = describe(m);
        String name = a.name();
        if (name == null || name.isBlank()) {
            throw new IllegalStateException("@ScheduledLock on " + where + ": name is empty");
        }
        Duration atMost = duration(where, "@ScheduledLock", "lockAtMostFor", a.lockAtMostFor(), false);
        Duration atLeast = duration(where, "@ScheduledLock", "lockAtLeastFor", a.lockAtLeastFor(), true);
        if (atMost == null || atMost.isZero()) {
            throw new IllegalStateException(
                    "@ScheduledLock on " + where + ": lockAtMostFor must be positive: '" + a.lockAtMostFor() + "'");
        }
        if (atLeast == null) {
            atLeast = Duration.ZERO;
        }
        if (atLeast.compareTo(atMost) > 0) {
            throw new IllegalStateException("@ScheduledLock on " + where + ": lockAtLeastFor " + a.lockAtLeastFor()
                    + " exceeds lockAtMostFor " + a.lockAtMostFor());
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
                result);
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

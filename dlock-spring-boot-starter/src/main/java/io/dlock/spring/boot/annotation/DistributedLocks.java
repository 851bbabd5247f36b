package io.dlock.spring.boot.annotation;

import io.dlock.Lease;
import java.util.ArrayDeque;
import java.util.Iterator;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * The lease of the innermost {@link DistributedLock @DistributedLock} or
 * {@link ScheduledLock @ScheduledLock} method running on the current thread.
 *
 * <p>Backed by a thread-local stack that the aspect pushes before the method body runs and pops when
 * it returns, so it works on platform and virtual threads alike. An async method's body sees its
 * lease while it runs on the calling thread; work it hands to other threads should take the lease
 * along (or declare a {@link Lease} parameter, which the aspect fills in).
 *
 * <p>Thread-safety: safe from any thread; each thread sees only its own leases.
 */
public final class DistributedLocks {
    private static final ThreadLocal<ArrayDeque<Frame>> STACK = ThreadLocal.withInitial(() -> new ArrayDeque<>(4));

    private DistributedLocks() {}

    /** One aspect call on this thread: the lock name and the lease it runs under. */
    record Frame(String name, Lease lease) {}

    /**
     * The lease of the innermost annotated method running on this thread.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure:
     * {@link IllegalStateException} when no annotated method is running on this thread.
     *
     * @return the current lease (pass its {@link Lease#fencingToken()} to the resource you protect)
     * @throws IllegalStateException if no {@code @DistributedLock}/{@code @ScheduledLock} method runs on this thread
     */
    public static Lease currentLease() {
        Frame top = STACK.get().peek();
        if (top == null) {
            throw new IllegalStateException("no @DistributedLock or @ScheduledLock method is running on thread "
                    + Thread.currentThread().getName());
        }
        return top.lease();
    }

    /**
     * The lease of the innermost annotated method running on this thread, if any.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @return the lease, or empty outside annotated methods
     */
    public static Optional<Lease> findCurrentLease() {
        Frame top = STACK.get().peek();
        return top == null ? Optional.empty() : Optional.of(top.lease());
    }

    /**
     * The lease this thread holds through the aspect for {@code lockName}, if any.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @param lockName the lock name
     * @return the lease of the innermost annotated method on this thread holding {@code lockName}
     */
    public static Optional<Lease> findLease(String lockName) {
        Frame f = find(lockName);
        return f == null ? Optional.empty() : Optional.of(f.lease());
    }

    static @Nullable Frame find(String name) {
        ArrayDeque<Frame> stack = STACK.get();
        if (stack.isEmpty()) {
            return null;
        }
        for (Iterator<Frame> it = stack.iterator(); it.hasNext(); ) {
            Frame f = it.next();
            if (f.name().equals(name)) {
                return f;
            }
        }
        return null;
    }

    static ArrayDeque<Frame> push(String name, Lease lease) {
        ArrayDeque<Frame> stack = STACK.get();
        stack.push(new Frame(name, lease));
        return stack;
    }

    static void pop(ArrayDeque<Frame> stack) {
        stack.pop();
    }
}

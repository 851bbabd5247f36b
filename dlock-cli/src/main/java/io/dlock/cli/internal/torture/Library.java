package io.dlock.cli.internal.torture;

import java.util.EnumSet;
import java.util.Locale;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * Whose lock the torture's workers take: dlock's, or an anchor library's for comparison (issue 17
 * item 6). The anchors' workers live in {@code dlock-benchmarks}, which carries Curator and
 * Redisson and Spring Integration; dlock-cli's own jar does not, so a run with an anchor must be started from the
 * benchmarks jar ({@code ./dlock torture --library ...} does that).
 */
public enum Library {
    /** dlock's own client ({@link TortureWorker}). */
    DLOCK("dlock", TortureWorker.class.getName(), "", EnumSet.allOf(Primitive.class)),
    /**
     * Apache Curator's {@code InterProcessMutex}; careful ({@code --check-valid}): no {@code
     * SUSPENDED} without a later {@code RECONNECTED}, and no {@code LOST}, since the grant, as its
     * documentation tells users to watch with a {@code ConnectionStateListener}. With {@code
     * --primitive election}, Curator's {@code LeaderLatch}, its term numbered by the latch node's
     * sequence number.
     */
    CURATOR(
            "curator",
            "io.dlock.benchmarks.torture.CuratorTortureWorker",
            "zookeeper",
            EnumSet.of(Primitive.EXCLUSIVE, Primitive.ELECTION)),
    /**
     * Redisson's {@code RLock} (as {@code RFencedLock}, whose token only tells the run which write
     * was stale; the store refuses nothing); careful ({@code --check-valid}): {@code
     * isHeldByCurrentThread()}, a round trip to Redis, right before the write.
     */
    REDISSON("redisson", "io.dlock.benchmarks.torture.RedissonTortureWorker", "redis", EnumSet.of(Primitive.EXCLUSIVE)),
    /**
     * Spring Integration's {@code LockRegistryLeaderInitiator} on a {@code JdbcLockRegistry}
     * (PostgreSQL), elections only. It has no term number: the worker numbers a term by the moment
     * it was granted (this machine's monotonic clock), which tells the run which write was stale
     * but is no fence a resource could be given; run it {@code --no-fenced}.
     */
    SPRING("spring", "io.dlock.benchmarks.torture.SpringTortureWorker", "jdbc", EnumSet.of(Primitive.ELECTION));

    private final String cliName;
    private final String workerClass;
    private final String backend;
    private final Set<Primitive> primitives;

    Library(String cliName, String workerClass, String backend, Set<Primitive> primitives) {
        this.cliName = cliName;
        this.workerClass = workerClass;
        this.backend = backend;
        this.primitives = Set.copyOf(primitives);
    }

    /** The primitives ({@code --primitive}) the library's workers take. */
    public Set<Primitive> primitives() {
        return primitives;
    }

    /** {@link #primitives()} for a message: {@code --primitive exclusive or election}. */
    public String primitivesText() {
        return "--primitive "
                + primitives.stream().sorted().map(Primitive::cliName).collect(Collectors.joining(" or "));
    }

    /** The name {@code --library} takes. */
    public String cliName() {
        return cliName;
    }

    /** The worker's main class. */
    String workerClass() {
        return workerClass;
    }

    /** The backend ({@link BackendTarget#backend()}) the library works on; empty for dlock (any). */
    String backend() {
        return backend;
    }

    /**
     * Parses a {@code --library} value.
     *
     * @param value dlock, curator, redisson or spring (any case)
     * @return the library
     * @throws IllegalArgumentException naming the value and the choices
     */
    public static Library parse(String value) {
        for (Library l : values()) {
            if (l.cliName.equals(value.trim().toLowerCase(Locale.ROOT))) {
                return l;
            }
        }
        throw new IllegalArgumentException("must be dlock, curator, redisson or spring, was '" + value + "'");
    }
}

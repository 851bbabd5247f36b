package io.dlock.cli.internal.torture;

import java.util.Locale;

/**
 * Whose lock the torture's workers take: dlock's, or an anchor library's for comparison (issue 17
 * item 6). The anchors' workers live in {@code dlock-benchmarks}, which carries Curator and
 * Redisson; dlock-cli's own jar does not, so a run with an anchor must be started from the
 * benchmarks jar ({@code ./dlock torture --library ...} does that).
 */
public enum Library {
    /** dlock's own client ({@link TortureWorker}). */
    DLOCK("dlock", TortureWorker.class.getName(), ""),
    /**
     * Apache Curator's {@code InterProcessMutex}; careful ({@code --check-valid}): no {@code
     * SUSPENDED} without a later {@code RECONNECTED}, and no {@code LOST}, since the grant, as its
     * documentation tells users to watch with a {@code ConnectionStateListener}.
     */
    CURATOR("curator", "io.dlock.benchmarks.torture.CuratorTortureWorker", "zookeeper"),
    /**
     * Redisson's {@code RLock} (as {@code RFencedLock}, whose token only tells the run which write
     * was stale; the store refuses nothing); careful ({@code --check-valid}): {@code
     * isHeldByCurrentThread()}, a round trip to Redis, right before the write.
     */
    REDISSON("redisson", "io.dlock.benchmarks.torture.RedissonTortureWorker", "redis");

    private final String cliName;
    private final String workerClass;
    private final String backend;

    Library(String cliName, String workerClass, String backend) {
        this.cliName = cliName;
        this.workerClass = workerClass;
        this.backend = backend;
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
     * @param value dlock, curator or redisson (any case)
     * @return the library
     * @throws IllegalArgumentException naming the value and the choices
     */
    public static Library parse(String value) {
        for (Library l : values()) {
            if (l.cliName.equals(value.trim().toLowerCase(Locale.ROOT))) {
                return l;
            }
        }
        throw new IllegalArgumentException("must be dlock, curator or redisson, was '" + value + "'");
    }
}

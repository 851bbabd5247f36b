package io.dlock.benchmarks.torture;

import com.zaxxer.hikari.HikariDataSource;
import io.dlock.benchmarks.SqlPool;
import io.dlock.cli.internal.torture.TortureWorker;
import java.net.URI;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;
import org.springframework.integration.jdbc.lock.DefaultLockRepository;
import org.springframework.integration.jdbc.lock.JdbcLockRegistry;
import org.springframework.integration.leader.Context;
import org.springframework.integration.leader.DefaultCandidate;
import org.springframework.integration.support.leader.LockRegistryLeaderInitiator;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;

/**
 * A torture candidate ({@code --primitive election}) on Spring Integration's {@code
 * LockRegistryLeaderInitiator} over a {@code JdbcLockRegistry}, as its documentation shows: a
 * {@code DefaultLockRepository} whose time to live is the run's lease time, the initiator's
 * defaults otherwise (a heartbeat that re-takes the lock every 500 ms, a busy wait of 50 ms), and
 * a candidate whose {@code onGranted}/{@code onRevoked} start and stop the work.
 *
 * <p>Spring gives a term no number. The run needs one to tell which write was stale, so the worker
 * numbers each term by the moment {@code onGranted} ran ({@link System#nanoTime()}: one monotonic
 * clock for every worker on this machine). That is no fencing token a resource could be given
 * (nothing on the database side ties it to the lock row), so the run is unfenced ({@code
 * --no-fenced}): the store refuses nothing and counts what it let through. The careful check
 * ({@code stillHeld}) is {@code Context.isLeader()}.
 *
 * <p>Thread-safety: a process entry point.
 */
public final class SpringTortureWorker {
    private SpringTortureWorker() {}

    /**
     * Runs the worker; see {@link TortureWorker} for the options and the protocol.
     *
     * @param args {@code --name value} pairs
     */
    public static void main(String[] args) {
        TortureWorker.runAnchorElection(args, SpringElection::open);
    }

    private static final class SpringElection implements TortureWorker.AnchorElection {
        private final HikariDataSource pool;
        private final DefaultLockRepository repository;
        private final LockRegistryLeaderInitiator initiator;
        private final Object monitor = new Object();

        /** The current term: its number and its context; null between terms. */
        private volatile @Nullable Term current;

        private record Term(long number, Context context) {}

        private SpringElection(HikariDataSource pool, DefaultLockRepository repository, String lock) {
            this.pool = pool;
            this.repository = repository;
            this.initiator = new LockRegistryLeaderInitiator(
                    new JdbcLockRegistry(repository), new DefaultCandidate("torture", lock) {
                        @Override
                        public void onGranted(Context context) {
                            synchronized (monitor) {
                                current = new Term(System.nanoTime(), context);
                                monitor.notifyAll();
                            }
                        }

                        @Override
                        public void onRevoked(Context context) {
                            Term ended = current;
                            current = null;
                            if (ended != null) {
                                TortureWorker.revoked(ended.number());
                            }
                        }
                    });
        }

        static SpringElection open(Map<String, String> options) {
            String uri = String.valueOf(options.get("uri"));
            if (!uri.startsWith("jdbc:postgresql:") && !uri.startsWith("jdbc:mariadb:")) {
                throw new IllegalArgumentException("the spring worker needs a jdbc:postgresql or jdbc:mariadb URI, got "
                        + uri.replaceAll("password=[^&]*", "password=***"));
            }
            Matcher lease = Pattern.compile("[?&]leaseTime=([^&]+)").matcher(uri);
            if (!lease.find()) {
                throw new IllegalArgumentException("the URI lacks leaseTime");
            }
            Duration ttl = AnchorUris.duration(URI.create("x:/?leaseTime=" + lease.group(1)), "leaseTime");
            Matcher table = Pattern.compile("[?&]dlockTable=([^&]+)").matcher(uri);
            String url = uri.replaceAll("[&](dlockTable|createTable|leaseTime)=[^&]*", "");
            HikariDataSource pool = SqlPool.open(url, 4, "spring-leader");
            try {
                SqlPool.createSpringLockTable(pool, url);
                DefaultLockRepository repository = new DefaultLockRepository(pool);
                repository.setRegion(table.find() ? table.group(1) : "torture"); // the run's namespace
                repository.setTimeToLive(Math.toIntExact(ttl.toMillis()));
                repository.setTransactionManager(new DataSourceTransactionManager(pool));
                repository.afterPropertiesSet();
                repository.afterSingletonsInstantiated();
                SpringElection election = new SpringElection(pool, repository, AnchorUris.lockName(options));
                election.initiator.start();
                return election;
            } catch (RuntimeException e) {
                pool.close();
                throw e;
            }
        }

        @Override
        public Optional<TortureWorker.AnchorTerm> awaitLeadership(Duration wait) throws InterruptedException {
            long deadline = System.nanoTime() + wait.toNanos();
            Term term;
            synchronized (monitor) {
                while ((term = current) == null && deadline - System.nanoTime() > 0) {
                    long left = (deadline - System.nanoTime()) / 1_000_000;
                    monitor.wait(Math.max(1, left));
                }
            }
            if (term == null) {
                return Optional.empty();
            }
            Term t = term;
            return Optional.of(new TortureWorker.AnchorTerm() {
                @Override
                public long token() {
                    return t.number();
                }

                @Override
                public boolean stillHeld() {
                    return current == t && t.context().isLeader();
                }
            });
        }

        @Override
        public void close() {
            try {
                initiator.destroy();
            } finally {
                try {
                    repository.close();
                } finally {
                    pool.close();
                }
            }
        }
    }
}

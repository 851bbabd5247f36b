package io.dlock.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;

import io.dlock.LeaderElection;
import io.dlock.Lease;
import io.dlock.testkit.ElectionContract;
import io.dlock.testkit.MutualExclusionChecker;
import io.dlock.testkit.Timing;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;
import org.apache.curator.retry.RetryOneTime;
import org.junit.jupiter.api.Test;

/**
 * Leader election on ZooKeeper: the testkit's contract, and a mixed fleet with Curator's {@code
 * LeaderSelector} on the same path (dlock's election {@code x} in namespace {@code ns} is the lock
 * {@code election:x}, so the path {@code /ns/election:x}; both queue there as {@code
 * InterProcessMutex} does).
 */
class ZooKeeperElectionIT extends ZooKeeperTestSupport implements ElectionContract {

    @Test
    void curatorLeaderSelectorAndDlock_samePath_alternateAndNeverLeadTogether() throws Exception {
        CuratorFramework curator = CuratorFrameworkFactory.newClient(server.connectString(), new RetryOneTime(100));
        curator.start();
        track(curator::close);
        MutualExclusionChecker checker = new MutualExclusionChecker();
        List<String> leaders = new CopyOnWriteArrayList<>();
        AtomicInteger curatorTerms = new AtomicInteger();
        LeaderSelector selector =
                new LeaderSelector(curator, "/" + namespace + "/election:shared", new LeaderSelectorListenerAdapter() {
                    @Override
                    public void takeLeadership(CuratorFramework client) throws Exception {
                        checker.enter("curator");
                        leaders.add("curator");
                        Thread.sleep(150);
                        checker.exit("curator");
                        curatorTerms.incrementAndGet();
                    }
                });
        selector.autoRequeue();
        LeaderElection dlock = client().leaderElection("shared");
        selector.start();
        try {
            runDlockTerms(dlock, checker, leaders, curatorTerms);
        } finally {
            selector.close();
            dlock.close();
        }
        assertThat(checker.violations())
                .as(String.valueOf(checker.firstViolation()))
                .isZero();
        assertThat(curatorTerms.get()).isGreaterThanOrEqualTo(4);
        // FIFO on one path: after the first dlock term the two alternate.
        List<String> fromDlock = leaders.subList(leaders.indexOf("dlock"), leaders.size());
        for (int i = 1; i < fromDlock.size(); i++) {
            assertThat(fromDlock.get(i)).as("leader %d of %s", i, fromDlock).isNotEqualTo(fromDlock.get(i - 1));
        }
        await().atMost(Timing.scale(Duration.ofSeconds(10)))
                .until(() -> children("election:shared").isEmpty());
    }

    /** Four dlock terms of 150 ms each, given up in turn; Curator leads in between. */
    private static void runDlockTerms(
            LeaderElection dlock, MutualExclusionChecker checker, List<String> leaders, AtomicInteger curatorTerms)
            throws Exception {
        await().atMost(Timing.scale(Duration.ofSeconds(10))).until(() -> curatorTerms.get() >= 1);
        dlock.start();
        int dlockTerms = 0;
        long previous = 0;
        long deadline = System.nanoTime() + Timing.scale(Duration.ofSeconds(30)).toNanos();
        while (dlockTerms < 4 && System.nanoTime() < deadline) {
            Optional<Lease> term = dlock.awaitLeadership(Duration.ofSeconds(5));
            if (term.isEmpty()) {
                continue;
            }
            checker.enter("dlock");
            leaders.add("dlock");
            assertThat(term.get().fencingToken()).isGreaterThan(previous);
            previous = term.get().fencingToken();
            Thread.sleep(150);
            checker.exit("dlock");
            term.get().close(); // give up: dlock rejoins behind Curator
            dlockTerms++;
        }
        assertThat(dlockTerms).isEqualTo(4);
    }

    private static org.awaitility.core.ConditionFactory await() {
        return org.awaitility.Awaitility.await().pollInterval(10, TimeUnit.MILLISECONDS);
    }
}

package io.dlock.testkit;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.stream.Collectors;
import org.apache.zookeeper.server.quorum.QuorumPeerMain;
import org.jspecify.annotations.Nullable;

/**
 * A ZooKeeper ensemble of 3 (or 5, 7) servers on loopback, each in its own JVM with its own data
 * directory, client port, quorum port and election port, for tests that kill, pause, restart or
 * cut off any member, the current leader included.
 *
 * <p>Each member runs {@code QuorumPeerMain} on the current classpath (ZooKeeper comes from the
 * Maven artifacts, as for {@link ZooKeeperProcess}): tick {@value #TICK_TIME_MS} ms, {@code
 * initLimit} {@value #INIT_LIMIT} and {@code syncLimit} {@value #SYNC_LIMIT} ticks (a follower
 * notices a dead leader within {@code syncLimit} ticks, 1 s), sessions of 1 s to 60 s, admin server
 * off, listening on 127.0.0.1 only.
 *
 * <p>Partitions: every member reaches every other member's quorum port (the leader-follower
 * connection, which carries proposals, commits and session pings) through a {@link FaultProxy} of
 * its own. {@link #partition(int)} drops that traffic both ways between the member and every other
 * one and resets the open connections, so the member can neither lead nor follow: it stops serving
 * and its clients must move to the majority. Leader-election messages still pass (ZooKeeper answers
 * a connection from a lower server id by connecting back to the address the peer sent, which
 * would go around a proxy), so a partitioned member takes part in elections but never completes
 * one. Cut off a minority member this way; to take the leader away, kill or pause it.
 *
 * <p>Thread-safety: safe from any thread; each member serializes its own lifecycle.
 */
public final class ZooKeeperEnsemble implements AutoCloseable {

    /*
     * Concurrency: members are fixed at start; each Member guards its child JVM with its own
     * monitor. The proxies are thread-safe.
     * Failure: a failed start closes whatever was started (members, proxies, directories).
     * Invariants: member i always has id i + 1, the same ports and the same data directory.
     */

    /** The tick, in milliseconds: sessions expire on tick boundaries. */
    public static final int TICK_TIME_MS = 500;

    /** Ticks a follower may take to connect to and sync with the leader. */
    public static final int INIT_LIMIT = 10;

    /** Ticks a follower may go without hearing from the leader (and the leader from it). */
    public static final int SYNC_LIMIT = 2;

    /** How long the ensemble may take to start until it has a leader, before {@link Timing}. */
    public static final Duration START_TIMEOUT = Duration.ofSeconds(60);

    private static final Duration PROBE_TIMEOUT = Duration.ofMillis(500);
    private static final List<String> JVM_OPTIONS = List.of(
            "-Xmx128m",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            "-Xshare:auto",
            "-Dzookeeper.admin.enableServer=false",
            "-Dznode.container.checkIntervalMs=" + EmbeddedZooKeeper.CONTAINER_CHECK_INTERVAL_MS,
            "-Dzookeeper.4lw.commands.whitelist=*",
            "-Dzookeeper.jmx.log4j.disable=true");

    private final List<Member> members;
    /** proxies.get(from).get(to): how member {@code from} reaches member {@code to}'s quorum port. */
    private final List<List<FaultProxy>> proxies;

    private final Path workDir;

    private ZooKeeperEnsemble(List<Member> members, List<List<FaultProxy>> proxies, Path workDir) {
        this.members = members;
        this.proxies = proxies;
        this.workDir = workDir;
    }

    /**
     * Starts a 3-server ensemble.
     *
     * <p>Blocking: until every member serves and one of them leads, at most {@link #START_TIMEOUT}
     * scaled by {@link Timing}. Thread-safety: safe from any thread. On failure: {@link
     * IllegalStateException} with the members' last output lines; nothing is left running.
     *
     * @return the running ensemble
     * @throws IllegalStateException if it does not form in time
     */
    public static ZooKeeperEnsemble start() {
        return start(3);
    }

    /**
     * Starts an ensemble of {@code size} servers.
     *
     * <p>Blocking: until every member serves and one of them leads, at most {@link #START_TIMEOUT}
     * scaled by {@link Timing}. Thread-safety: safe from any thread. On failure: {@link
     * IllegalStateException} with the members' last output lines; nothing is left running.
     *
     * @param size 3, 5 or 7
     * @return the running ensemble
     * @throws IllegalArgumentException if {@code size} is not 3, 5 or 7
     * @throws IllegalStateException if it does not form in time
     */
    public static ZooKeeperEnsemble start(int size) {
        return start(size, List.of());
    }

    /**
     * Starts an ensemble of {@code size} servers whose JVMs get {@code serverJvmOptions} after the
     * ensemble's own, for example {@code -Dorg.slf4j.simpleLogger.log.org.apache.zookeeper=info} to
     * read in {@link Member#log()} when the servers elected a leader and expired a session.
     *
     * <p>Blocking: until every member serves and one of them leads, at most {@link #START_TIMEOUT}
     * scaled by {@link Timing}. Thread-safety: safe from any thread. On failure: {@link
     * IllegalStateException} with the members' last output lines; nothing is left running.
     *
     * @param size 3, 5 or 7
     * @param serverJvmOptions added to every member's JVM options, also on a restart
     * @return the running ensemble
     * @throws IllegalArgumentException if {@code size} is not 3, 5 or 7
     * @throws IllegalStateException if it does not form in time
     */
    public static ZooKeeperEnsemble start(int size, List<String> serverJvmOptions) {
        List<String> jvmOptions = new ArrayList<>(JVM_OPTIONS);
        jvmOptions.addAll(List.copyOf(serverJvmOptions)); // a null element fails here, before anything starts
        if (size != 3 && size != 5 && size != 7) {
            throw new IllegalArgumentException("size must be 3, 5 or 7, was " + size);
        }
        Path work = Reaper.createTempDirectory("dlock-zkens-");
        int[] client = new int[size];
        int[] quorum = new int[size];
        int[] election = new int[size];
        for (int i = 0; i < size; i++) {
            client[i] = FreePorts.loopback();
            quorum[i] = FreePorts.loopback();
            election[i] = FreePorts.loopback();
        }
        List<List<FaultProxy>> proxies = new ArrayList<>();
        List<Member> members = new ArrayList<>();
        ZooKeeperEnsemble ensemble = new ZooKeeperEnsemble(members, proxies, work);
        try {
            for (int from = 0; from < size; from++) {
                List<FaultProxy> row = new ArrayList<>();
                for (int to = 0; to < size; to++) {
                    row.add(from == to ? null : FaultProxy.start(quorum[to]));
                }
                proxies.add(row);
            }
            for (int i = 0; i < size; i++) {
                List<String> servers = new ArrayList<>();
                for (int j = 0; j < size; j++) {
                    int quorumPort = i == j ? quorum[j] : proxies.get(i).get(j).port();
                    servers.add("server." + (j + 1) + "=127.0.0.1:" + quorumPort + ":" + election[j]);
                }
                members.add(new Member(i, client[i], work.resolve("m" + (i + 1)), servers, jvmOptions));
            }
            for (Member m : members) {
                m.launch(false);
            }
            // A leader with one follower is a quorum; the last member may still be syncing, and
            // refuses clients until it is done.
            ensemble.awaitServing(Timing.scale(START_TIMEOUT));
            return ensemble;
        } catch (RuntimeException e) {
            ensemble.close();
            throw e;
        }
    }

    /**
     * Returns how many servers the ensemble has.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: never fails.
     *
     * @return 3, 5 or 7
     */
    public int size() {
        return members.size();
    }

    /**
     * Returns member {@code i} (server id {@code i + 1}).
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: {@link
     * IndexOutOfBoundsException} for a bad index.
     *
     * @param i 0 to {@code size() - 1}
     * @return the member
     */
    public Member member(int i) {
        return members.get(i);
    }

    /**
     * Returns every member's client address, {@code 127.0.0.1:P1,127.0.0.1:P2,...}.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: never fails.
     *
     * @return the connect string
     */
    public String connectString() {
        return members.stream().map(Member::connectString).collect(Collectors.joining(","));
    }

    /**
     * Returns {@code zookeeper://127.0.0.1:P1,...,127.0.0.1:Pn/<namespace>}.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: {@link
     * IllegalArgumentException} for a blank namespace or one with whitespace.
     *
     * @param namespace the root znode path for dlock's data; one leading {@code '/'} is ignored
     * @return the URI
     * @throws IllegalArgumentException if {@code namespace} is blank or contains whitespace
     */
    public String uri(String namespace) {
        return "zookeeper://" + connectString() + "/" + TestServer.checkNamespace(namespace);
    }

    /**
     * Returns the index of the member that leads now, waiting until one does.
     *
     * <p>Blocking: until a member reports {@code Mode: leader}, at most {@code timeout}. Thread-safety:
     * safe from any thread. On failure: {@link IllegalStateException} naming every member's mode.
     *
     * @param timeout how long to wait
     * @return the leader's index
     * @throws IllegalStateException if no member leads within {@code timeout}
     */
    public int awaitLeader(Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            for (Member m : members) {
                if (m.mode().filter("leader"::equals).isPresent()) {
                    return m.index();
                }
            }
            if (System.nanoTime() - deadline > 0) {
                throw new IllegalStateException("no leader within " + timeout + ": " + modes() + tails());
            }
            sleep(50); // ZooKeeper offers no election callback across JVMs
        }
    }

    /**
     * Returns the index of the member that leads now.
     *
     * <p>Blocking: one four-letter word per member, each bounded by 0.5 s. Thread-safety: safe from
     * any thread. On failure: never fails.
     *
     * @return the leader's index, or empty during an election
     */
    public Optional<Integer> leader() {
        for (Member m : members) {
            if (m.mode().filter("leader"::equals).isPresent()) {
                return Optional.of(m.index());
            }
        }
        return Optional.empty();
    }

    /**
     * Returns the latest moment a member began to serve as leader or follower ({@link
     * Member#servingSince()}): the last time the ensemble may have given sessions a fresh timeout.
     *
     * <p>ZooKeeper does that in two places. A leader that takes over tracks every session it
     * inherits afresh, a full timeout from then. A follower that joins the leader replays the
     * transactions it missed, and each session created meanwhile enters the table of sessions it
     * reports as touched with its next ping to the leader, which then gives it a full timeout from
     * that moment. Either way a session whose client died just before expires a session timeout
     * after this moment at the earliest.
     *
     * <p>Blocking: one four-letter word per member, each bounded by 0.5 s. Thread-safety: safe from
     * any thread. On failure: never fails.
     *
     * @return a {@link System#nanoTime()} value, or empty if no member serves or answers
     */
    public OptionalLong latestServingSince() {
        OptionalLong latest = OptionalLong.empty();
        for (Member m : members) {
            OptionalLong since = m.servingSince();
            if (since.isPresent() && (latest.isEmpty() || since.getAsLong() - latest.getAsLong() > 0)) {
                latest = since;
            }
        }
        return latest;
    }

    /**
     * Reads from a {@code mntr} answer how long the member has served in its current role, in
     * milliseconds: a leader's {@code zk_leader_uptime} (counted from the start of its session
     * tracker), a follower's or observer's {@code zk_uptime} (counted from the start of its server
     * for this leader, just before it syncs); empty for anything else.
     */
    static OptionalLong servingMillis(String mntr) {
        OptionalLong leader = mntrNumber(mntr, "zk_leader_uptime");
        if (leader.isPresent()) {
            return leader;
        }
        String state = mntrValue(mntr, "zk_server_state").orElse("");
        return state.equals("follower") || state.equals("observer")
                ? mntrNumber(mntr, "zk_uptime")
                : OptionalLong.empty();
    }

    private static OptionalLong mntrNumber(String mntr, String key) {
        Optional<String> value = mntrValue(mntr, key);
        if (value.isEmpty()) {
            return OptionalLong.empty();
        }
        try {
            long n = Long.parseLong(value.get());
            return n < 0 ? OptionalLong.empty() : OptionalLong.of(n);
        } catch (NumberFormatException e) {
            return OptionalLong.empty();
        }
    }

    /** The value of {@code key} in a {@code mntr} answer (one {@code key<whitespace>value} per line). */
    private static Optional<String> mntrValue(String mntr, String key) {
        for (String line : mntr.lines().toList()) {
            String trimmed = line.trim();
            if (trimmed.length() > key.length()
                    && trimmed.startsWith(key)
                    && Character.isWhitespace(trimmed.charAt(key.length()))) {
                return Optional.of(trimmed.substring(key.length()).trim());
            }
        }
        return Optional.empty();
    }

    /**
     * Waits until every live, unpartitioned member serves again as leader or follower, with one
     * leader.
     *
     * <p>Blocking: up to {@code timeout}. Thread-safety: safe from any thread. On failure: {@link
     * IllegalStateException} naming every member's mode.
     *
     * @param timeout how long to wait
     * @throws IllegalStateException if the ensemble does not settle in time
     */
    public void awaitServing(Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            boolean ok = leader().isPresent();
            for (Member m : members) {
                if (m.isAlive() && !m.isPartitioned() && m.mode().isEmpty()) {
                    ok = false;
                }
            }
            if (ok) {
                return;
            }
            if (System.nanoTime() - deadline > 0) {
                throw new IllegalStateException("ensemble not serving within " + timeout + ": " + modes() + tails());
            }
            sleep(50);
        }
    }

    /**
     * Cuts member {@code i} off from the others' quorum traffic (both ways) and resets its open
     * quorum connections: it stops serving, and its clients must move. See the class description
     * for what still passes.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: {@link
     * IndexOutOfBoundsException} for a bad index.
     *
     * @param i the member
     */
    public void partition(int i) {
        Member m = members.get(i);
        m.partitioned = true;
        for (FaultProxy p : proxiesOf(i)) {
            p.blackhole(FaultProxy.Direction.BOTH);
            p.resetConnections();
        }
    }

    /**
     * Lets member {@code i}'s quorum traffic pass again; it rejoins (as a follower, or leader if
     * elected).
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: {@link
     * IndexOutOfBoundsException} for a bad index.
     *
     * @param i the member
     */
    public void heal(int i) {
        Member m = members.get(i);
        for (FaultProxy p : proxiesOf(i)) {
            p.pass();
        }
        m.partitioned = false;
    }

    private List<FaultProxy> proxiesOf(int i) {
        List<FaultProxy> list = new ArrayList<>();
        for (int j = 0; j < members.size(); j++) {
            if (j != i) {
                list.add(proxies.get(i).get(j));
                list.add(proxies.get(j).get(i));
            }
        }
        return list;
    }

    /**
     * Stops every member and proxy and deletes the data directories.
     *
     * <p>Blocking: until every process has exited. Thread-safety: safe from any thread; idempotent.
     * On failure: never throws; problems are logged.
     */
    @Override
    public void close() {
        for (Member m : members) {
            m.close();
        }
        for (List<FaultProxy> row : proxies) {
            for (FaultProxy p : row) {
                if (p != null) {
                    p.close();
                }
            }
        }
        Reaper.deleteTempDirectory(workDir);
    }

    @Override
    public String toString() {
        return "ZooKeeperEnsemble[" + connectString() + "]";
    }

    private String modes() {
        return members.stream()
                .map(m -> "server." + (m.index() + 1) + "="
                        + (m.isAlive() ? m.mode().orElse("not serving") : "down"))
                .collect(Collectors.joining(", "));
    }

    private String tails() {
        StringBuilder t = new StringBuilder();
        for (Member m : members) {
            t.append("\n--- server.").append(m.index() + 1).append(m.tail());
        }
        return t.toString();
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    /**
     * One server of the ensemble, in its own JVM. {@link #restart()} starts it again on the same
     * ports and data directory; it rejoins the ensemble.
     *
     * <p>Thread-safety: safe from any thread; lifecycle calls are serialized on this object.
     */
    public static final class Member implements TestServer {
        private final int index;
        private final int port;
        private final Path dir;
        private final Path dataDir;
        private final Path config;
        private final List<String> servers;
        private final List<String> jvmOptions;
        private volatile @Nullable ChildJvm jvm; // written under `this`; read without it; null until launched

        /** The processes this member ran before the current one, oldest first, for {@link #log()}. */
        @GuardedBy("this")
        private final List<ChildJvm> earlier = new ArrayList<>();

        private volatile boolean partitioned;

        @GuardedBy("this")
        private boolean closed;

        private Member(int index, int port, Path dir, List<String> servers, List<String> jvmOptions) {
            this.index = index;
            this.jvmOptions = List.copyOf(jvmOptions);
            this.port = port;
            this.dir = dir;
            this.dataDir = dir.resolve("data");
            this.config = dir.resolve("zoo.cfg");
            this.servers = List.copyOf(servers);
        }

        /**
         * Returns the member's index in the ensemble (server id minus one).
         *
         * <p>Blocking: never. Thread-safety: safe from any thread. On failure: never fails.
         *
         * @return the index
         */
        public int index() {
            return index;
        }

        @Override
        public int port() {
            return port;
        }

        /**
         * Returns {@code zookeeper://127.0.0.1:PORT/<namespace>}: this member alone.
         *
         * <p>Blocking: never. Thread-safety: safe from any thread. On failure: {@link
         * IllegalArgumentException} for a blank namespace or one with whitespace.
         *
         * @param namespace the root znode path; one leading {@code '/'} is ignored
         * @return the URI
         * @throws IllegalArgumentException if {@code namespace} is blank or contains whitespace
         */
        @Override
        public String uri(String namespace) {
            return EmbeddedZooKeeper.zookeeperUri(port, namespace);
        }

        /**
         * Returns the pid of the member's current process.
         *
         * <p>Blocking: never. Thread-safety: safe from any thread. On failure: never fails.
         *
         * @return the pid
         */
        public long pid() {
            return launched().pid();
        }

        /** The current process; every member is launched when the ensemble starts. */
        private ChildJvm launched() {
            ChildJvm j = jvm;
            if (j == null) {
                throw new IllegalStateException(this + " was never started");
            }
            return j;
        }

        /**
         * Returns whether the process runs (a paused one counts as running).
         *
         * <p>Blocking: never. Thread-safety: safe from any thread. On failure: never fails.
         *
         * @return true while the process has not exited
         */
        public boolean isAlive() {
            ChildJvm j = jvm;
            return j != null && j.isAlive();
        }

        /**
         * Returns whether {@link ZooKeeperEnsemble#partition(int)} cut this member off.
         *
         * <p>Blocking: never. Thread-safety: safe from any thread. On failure: never fails.
         *
         * @return true while partitioned
         */
        public boolean isPartitioned() {
            return partitioned;
        }

        /**
         * Returns {@code leader}, {@code follower} or {@code observer} from the member's {@code srvr}
         * answer, or empty if it does not serve (down, paused, electing, cut off).
         *
         * <p>Blocking: at most 0.5 s. Thread-safety: safe from any thread. On failure: never fails.
         *
         * @return the mode, or empty
         */
        public Optional<String> mode() {
            return FourLetterWords.ask(port, "srvr", PROBE_TIMEOUT).flatMap(answer -> answer.lines()
                    .filter(l -> l.startsWith("Mode: "))
                    .map(l -> l.substring("Mode: ".length()).trim())
                    .findFirst());
        }

        /**
         * Returns when this member began its current term as leader or follower, read from its
         * {@code mntr} answer (see {@link ZooKeeperEnsemble#latestServingSince()} for why it
         * matters to sessions): a leader from the start of its session tracker, a follower from
         * the start of its server for that leader, just before it syncs.
         *
         * <p>The time served is subtracted from the moment the question was sent, so the result
         * is no later than the real moment (earlier by at most the answer's round trip).
         *
         * <p>Blocking: at most 0.5 s. Thread-safety: safe from any thread. On failure: never
         * fails.
         *
         * @return a {@link System#nanoTime()} value, or empty if the member does not serve (down,
         *     paused, electing, cut off)
         */
        public OptionalLong servingSince() {
            long asked = System.nanoTime();
            OptionalLong served = FourLetterWords.ask(port, "mntr", PROBE_TIMEOUT)
                    .map(ZooKeeperEnsemble::servingMillis)
                    .orElse(OptionalLong.empty());
            return served.isPresent() ? OptionalLong.of(asked - served.getAsLong() * 1_000_000L) : OptionalLong.empty();
        }

        /**
         * Kills the member with SIGKILL and waits for the process to exit.
         *
         * <p>Blocking: until it has exited, at most 30 s. Thread-safety: safe from any thread;
         * killing a dead member does nothing. On failure: {@link IllegalStateException} if it does
         * not exit.
         */
        public synchronized void kill() {
            launched().kill();
        }

        /**
         * Freezes the member with SIGSTOP (a long GC pause, a hung host).
         *
         * <p>Blocking: until the signal is sent. Thread-safety: safe from any thread. On failure:
         * {@link IllegalStateException} if the process has exited.
         */
        public synchronized void pause() {
            launched().pause();
        }

        /**
         * Lets a paused member run again with SIGCONT.
         *
         * <p>Blocking: until the signal is sent. Thread-safety: safe from any thread. On failure:
         * {@link IllegalStateException} if the process has exited.
         */
        public synchronized void resume() {
            launched().resume();
        }

        /**
         * Kills the member if alive and starts it again on the same ports and data; it rejoins.
         *
         * <p>Blocking: until it serves as leader or follower again, at most {@link #START_TIMEOUT}
         * scaled by {@link Timing} (a member that cannot reach a quorum never serves, so restart a
         * member only while a majority is up). Thread-safety: safe from any thread. On failure:
         * {@link IllegalStateException} if closed or it does not serve in time; it is then left
         * stopped.
         *
         * @throws IllegalStateException if closed or the restart fails
         */
        @Override
        public synchronized void restart() {
            if (closed) {
                throw new IllegalStateException(this + " is closed");
            }
            launched().kill();
            launch(true);
        }

        /**
         * Kills the member if alive and starts it again without waiting for it to serve (for a
         * restart while no quorum is up).
         *
         * <p>Blocking: until the process is started. Thread-safety: safe from any thread. On
         * failure: {@link IllegalStateException} if closed or the process cannot be started.
         */
        public synchronized void restartAsync() {
            if (closed) {
                throw new IllegalStateException(this + " is closed");
            }
            launched().kill();
            launch(false);
        }

        /** Kills the process; the ensemble deletes the directories. */
        @Override
        public synchronized void close() {
            if (closed) {
                return;
            }
            closed = true;
            ChildJvm j = jvm;
            if (j != null) {
                j.close();
            }
        }

        /**
         * Returns every line the member's processes wrote (stdout and stderr), those of the
         * processes a restart replaced first, oldest first.
         *
         * <p>Blocking: never. Thread-safety: safe from any thread; a snapshot. On failure: never
         * fails.
         *
         * @return the lines, empty before the first launch
         */
        public synchronized List<String> log() {
            List<String> all = new ArrayList<>();
            earlier.forEach(j -> all.addAll(j.lines()));
            ChildJvm j = jvm;
            if (j != null) {
                all.addAll(j.lines());
            }
            return all;
        }

        @Override
        public String toString() {
            return "ZooKeeperEnsemble.Member[server." + (index + 1) + ", " + connectString() + "]";
        }

        String tail() {
            ChildJvm j = jvm;
            return j == null ? " (not started)" : j.tail();
        }

        private synchronized void launch(boolean awaitServing) {
            writeConfig();
            ChildJvm child = ChildJvm.start(QuorumPeerMain.class, List.of(config.toString()), jvmOptions);
            ChildJvm before = jvm;
            if (before != null) {
                earlier.add(before);
            }
            jvm = child;
            if (!awaitServing) {
                return;
            }
            Duration timeout = Timing.scale(START_TIMEOUT);
            long deadline = System.nanoTime() + timeout.toNanos();
            while (mode().isEmpty()) {
                if (!child.isAlive() || System.nanoTime() - deadline > 0) {
                    String why = child.isAlive() ? "did not serve within " + timeout : "exited";
                    String tail = child.tail();
                    child.close();
                    throw new IllegalStateException(this + " " + why + tail);
                }
                sleep(50); // polls readiness; ZooKeeper offers no start-up callback across JVMs
            }
        }

        private void writeConfig() {
            List<String> lines = new ArrayList<>(List.of(
                    "tickTime=" + TICK_TIME_MS,
                    "initLimit=" + INIT_LIMIT,
                    "syncLimit=" + SYNC_LIMIT,
                    "minSessionTimeout=" + EmbeddedZooKeeper.MIN_SESSION_TIMEOUT_MS,
                    "maxSessionTimeout=" + EmbeddedZooKeeper.MAX_SESSION_TIMEOUT_MS,
                    "dataDir=" + dataDir.toAbsolutePath(),
                    "clientPort=" + port,
                    "clientPortAddress=127.0.0.1",
                    "maxClientCnxns=0",
                    "admin.enableServer=false",
                    "4lw.commands.whitelist=*",
                    "standaloneEnabled=false",
                    "reconfigEnabled=false",
                    // kill -9 keeps the page cache, so skipping fsync loses nothing a test can observe.
                    "forceSync=no"));
            lines.addAll(servers);
            try {
                Files.createDirectories(dataDir);
                Files.writeString(dataDir.resolve("myid"), Integer.toString(index + 1), StandardCharsets.US_ASCII);
                Files.write(config, lines, StandardCharsets.UTF_8);
            } catch (IOException e) {
                throw new UncheckedIOException("cannot write " + config, e);
            }
        }
    }
}

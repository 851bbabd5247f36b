package io.dlock.spring.boot.leader;

import io.dlock.LeaderElection;
import io.dlock.Lease;
import io.dlock.LockClient;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.ApplicationEvent;
import org.springframework.context.ApplicationEventPublisher;
import org.springframework.context.SmartLifecycle;

/**
 * The application's leader elections, one candidate of this instance per name, started with the
 * application context and closed with it (a {@link SmartLifecycle} in the last phase: elections
 * join after every other bean has started and leave before any stops). Elections come from {@code
 * @LeaderOnly} methods and from {@link #election(String)}.
 *
 * <p>Each election publishes a {@link LeaderElectedEvent} when this instance is elected and a
 * {@link LeaderRevokedEvent} when that term ends, in that order, once per term, on the lock
 * client's listener thread.
 *
 * <p>Concurrency: the registry ({@link #lock}) guards the names, the elections and {@code running};
 * no election call is made while it is held except creating one. The thread-bound term of a
 * {@code @LeaderOnly} call is a thread-local stack.
 *
 * <p>Thread-safety: safe from any thread.
 */
public final class LeaderElections implements SmartLifecycle {
    private static final Logger log = LoggerFactory.getLogger(LeaderElections.class);
    private static final ThreadLocal<Deque<Lease>> CURRENT = ThreadLocal.withInitial(ArrayDeque::new);

    private final Supplier<LockClient> client;
    private final ApplicationEventPublisher publisher;
    private final Object lock = new Object();
    private final Set<String> names = new TreeSet<>();
    private final Map<String, LeaderElection> elections = new LinkedHashMap<>();
    private boolean running;

    /**
     * Creates the registry; nothing is sent until {@link #start()}.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @param client the application's lock client, looked up at the first start
     * @param publisher where the elected and revoked events go
     */
    public LeaderElections(Supplier<LockClient> client, ApplicationEventPublisher publisher) {
        this.client = client;
        this.publisher = publisher;
    }

    /**
     * Makes {@code name} one of the elections this instance takes part in: joined now if the
     * context has started, else when it starts. Idempotent.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail (the name
     * is checked when the election is made).
     *
     * @param name the election's name
     */
    public void register(String name) {
        boolean startNow;
        synchronized (lock) {
            startNow = names.add(name) && running;
        }
        if (startNow) {
            join(name);
        }
    }

    /**
     * The election {@code name} of this instance, registered ({@link #register}) and, once the
     * context has started, joined. Add listeners to it or ask it who leads; do not close it (the
     * context does).
     *
     * <p>Blocking: only to create the election (no network call). Thread-safety: safe from any
     * thread. On failure: a bad name is an {@link IllegalArgumentException}, nothing registered.
     *
     * @param name the election's name
     * @return the election
     * @throws IllegalArgumentException if the name breaks the name rules
     */
    public LeaderElection election(String name) {
        LeaderElection e = electionFor(name);
        register(name);
        return e;
    }

    /**
     * Whether this instance leads {@code name} now (a valid term).
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail; an election
     * this instance does not take part in is false.
     *
     * @param name the election's name
     * @return whether this instance leads it
     */
    public boolean isLeader(String name) {
        return term(name).isPresent();
    }

    /**
     * This instance's current valid term of {@code name}, if it leads.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @param name the election's name
     * @return the term, or empty
     */
    public Optional<Lease> term(String name) {
        LeaderElection e;
        synchronized (lock) {
            e = running ? elections.get(name) : null;
        }
        return e == null ? Optional.empty() : e.leadership();
    }

    /**
     * The elections' names with this instance's part in each: the term number it leads with, or
     * 0 as a candidate; for the actuator.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @return name to term (0 when not leading), in name order
     */
    public Map<String, Long> terms() {
        List<String> all;
        synchronized (lock) {
            all = new ArrayList<>(names);
        }
        Map<String, Long> out = new LinkedHashMap<>();
        for (String name : all) {
            out.put(name, term(name).map(Lease::fencingToken).orElse(0L));
        }
        return Collections.unmodifiableMap(out);
    }

    /**
     * This instance's part in each election for health details: {@code elections} mapped to
     * name to {@code "leader, term N"} or {@code "candidate"}; empty without elections.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @return the details to add
     */
    public Map<String, Object> healthDetails() {
        Map<String, Long> terms = terms();
        if (terms.isEmpty()) {
            return Map.of();
        }
        Map<String, Object> parts = new LinkedHashMap<>();
        terms.forEach((name, term) -> parts.put(name, term == 0 ? "candidate" : "leader, term " + term));
        return Map.of("elections", Collections.unmodifiableMap(parts));
    }

    /**
     * The term of the {@code @LeaderOnly} method running on this thread.
     *
     * <p>Blocking: never. Thread-safety: reads this thread's state. On failure: throws outside a
     * {@code @LeaderOnly} call.
     *
     * @return the innermost {@code @LeaderOnly} call's term
     * @throws IllegalStateException if no {@code @LeaderOnly} method runs on this thread
     */
    public static Lease currentTerm() {
        Lease term = CURRENT.get().peek();
        if (term == null) {
            throw new IllegalStateException("no @LeaderOnly method runs on thread '"
                    + Thread.currentThread().getName() + "'");
        }
        return term;
    }

    /**
     * Binds {@code term} to this thread for a {@code @LeaderOnly} call; the aspect's, not the
     * application's.
     *
     * <p>Blocking: never. Thread-safety: this thread only. On failure: cannot fail.
     *
     * @param term the leader's term
     * @return unbinds it; call it in a finally block
     */
    public static Runnable bind(Lease term) {
        Deque<Lease> stack = CURRENT.get();
        stack.push(term);
        return () -> {
            stack.pop();
            if (stack.isEmpty()) {
                CURRENT.remove();
            }
        };
    }

    private LeaderElection electionFor(String name) {
        synchronized (lock) {
            LeaderElection e = elections.get(name);
            if (e == null) {
                e = client.get().leaderElection(name);
                e.onElected(term -> publish(new LeaderElectedEvent(this, name, term)));
                e.onRevoked(term -> publish(new LeaderRevokedEvent(this, name, term)));
                elections.put(name, e);
            }
            return e;
        }
    }

    private void join(String name) {
        try {
            electionFor(name).start();
        } catch (RuntimeException e) {
            // A closed client (the context is stopping) or a bad name from a programmatic call.
            log.warn("election '{}' could not start: {}", name, e.toString());
        }
    }

    private void publish(ApplicationEvent event) {
        try {
            publisher.publishEvent(event);
        } catch (RuntimeException e) { // a listener's failure, or a context that is closing
            log.warn("publishing {} failed: {}", event, e.toString());
        }
    }

    /**
     * Joins every registered election.
     *
     * <p>Blocking: only to create elections (no network call). Thread-safety: called by the
     * context. On failure: an election that cannot start is logged and left out.
     */
    @Override
    public void start() {
        List<String> all;
        synchronized (lock) {
            if (running) {
                return;
            }
            running = true;
            all = new ArrayList<>(names);
        }
        all.forEach(this::join);
    }

    /**
     * Leaves every election: a current term ends (its {@link LeaderRevokedEvent} is published)
     * and the next candidate elsewhere leads.
     *
     * <p>Blocking: until each election's release is sent, at most about the connect timeout each.
     * Thread-safety: called by the context. On failure: a failed release is logged by the client;
     * the term ends with the lease.
     */
    @Override
    public void stop() {
        List<LeaderElection> all;
        synchronized (lock) {
            if (!running) {
                return;
            }
            running = false;
            all = new ArrayList<>(elections.values());
            elections.clear();
        }
        for (LeaderElection e : all) {
            try {
                e.close();
            } catch (RuntimeException ex) {
                log.warn("election '{}' did not close cleanly: {}", e.name(), ex.toString());
            }
        }
    }

    @Override
    public boolean isRunning() {
        synchronized (lock) {
            return running;
        }
    }

    /** Last to start, first to stop: the leader stops leading before the beans it drives stop. */
    @Override
    public int getPhase() {
        return DEFAULT_PHASE;
    }

    @Override
    public String toString() {
        synchronized (lock) {
            return "LeaderElections" + names + (running ? "" : " (stopped)");
        }
    }
}

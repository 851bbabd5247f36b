package io.dlock.spring.integration;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.springframework.integration.leader.Context;
import org.springframework.integration.leader.DefaultCandidate;
import org.springframework.integration.leader.event.LeaderEventPublisher;
import org.springframework.integration.support.leader.LockRegistryLeaderInitiator;
import org.springframework.integration.support.locks.LockRegistry;

/**
 * Two {@link LockRegistryLeaderInitiator}s for one role, each on its own registry (its own node), with
 * the events each publishes (OnGrantedEvent, OnRevokedEvent through a {@link LeaderEventPublisher}) in one
 * ordered list, and a sampler that counts the moments both claim to lead. (Spring's initiator
 * publishes OnRevokedEvent after it unlocks, so the other node's OnGrantedEvent may come first: the
 * order is checked per node, exclusion by the sampler.)
 */
final class LeaderPair {
    final Node a;
    final Node b;
    final AtomicInteger bothLeading = new AtomicInteger();
    private final List<String> events = new CopyOnWriteArrayList<>();

    LeaderPair(LockRegistry registryA, LockRegistry registryB, String role) {
        a = new Node("a", registryA, role);
        b = new Node("b", registryB, role);
    }

    private final Thread sampler = new Thread(this::sample, "leader-sampler");
    private volatile boolean sampling = true;

    /** Starts both initiators, and a sampler that checks both nodes every 2 ms until {@link #stop()}. */
    void start() {
        sampler.start();
        a.initiator.start();
        b.initiator.start();
    }

    void stop() throws InterruptedException {
        a.initiator.stop();
        b.initiator.stop();
        sampling = false;
        sampler.join();
    }

    /** Counts the samples in which both nodes claim to lead (their contexts' isLeader). */
    private void sample() {
        while (sampling) {
            if (leaders() > 1) {
                bothLeading.incrementAndGet();
            }
            try {
                Thread.sleep(2);
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    int leaders() {
        return (a.context().isLeader() ? 1 : 0) + (b.context().isLeader() ? 1 : 0);
    }

    Node leader() {
        return a.context().isLeader() ? a : b;
    }

    Node other(Node n) {
        return n == a ? b : a;
    }

    /** The events of one node, in order ("granted", "revoked"). */
    List<String> events(Node node) {
        return events.stream()
                .filter(e -> e.endsWith(" " + node.name))
                .map(e -> e.substring(0, e.indexOf(' ')))
                .toList();
    }

    final class Node {
        final String name;
        final LockRegistryLeaderInitiator initiator;
        final AtomicInteger granted = new AtomicInteger();
        final AtomicInteger revoked = new AtomicInteger();

        Node(String name, LockRegistry registry, String role) {
            this.name = name;
            this.initiator = new LockRegistryLeaderInitiator(registry, new DefaultCandidate(name, role));
            // Room for the other candidate to take the lock after a yield, on backends without a queue too.
            initiator.setBusyWaitMillis(500);
            initiator.setHeartBeatMillis(200);
            initiator.setLeaderEventPublisher(new LeaderEventPublisher() {
                @Override
                public void publishOnGranted(Object source, Context context, String r) {
                    granted.incrementAndGet();
                    events.add("granted " + name);
                }

                @Override
                public void publishOnRevoked(Object source, Context context, String r) {
                    revoked.incrementAndGet();
                    events.add("revoked " + name);
                }

                @Override
                public void publishOnFailedToAcquire(Object source, Context context, String r) {}
            });
        }

        Context context() {
            return initiator.getContext();
        }
    }
}

package io.dlock.core;

import io.dlock.spi.EntryLostException;
import io.dlock.spi.Grant;
import java.time.Duration;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps lease-based grants (finite {@link Grant#validUntilNanos()}) alive, and declares them lost
 * before they run out.
 *
 * <p>Design: one periodic tick per client, not a timer per lease, so that many held leases cost one
 * scheduled task and their renewals leave together (a pipelining client such as Lettuce sends them
 * in one flush). Every tick, each tracked grant that was last renewed a third of the lease time ago
 * is renewed; a grant with less than two ticks of validity left is declared lost, so {@code onLost}
 * fires before the server could let the next holder in, never after. A failed renewal is retried on
 * the next tick while validity remains; {@link EntryLostException} (the server no longer has the
 * grant) is a loss at once. With renewal off, grants are only watched for expiry.
 *
 * <p>Which grants: the client's live acquisitions that are HELD with a finite validity, read from
 * its {@link Registry} each tick, not a set of its own (a node less per held lock, W4). A grant
 * leaves by leaving HELD: released, or lost (a lost grant is no longer live).
 *
 * <p>Concurrency: the tick runs on the client's timer thread; renewal replies arrive on the
 * backend's threads. Each acquisition has at most one renewal in flight ({@link
 * Acquisition#startRenewal}); its grant is replaced only while it is HELD.
 */
final class Renewer {
    private static final Logger log = LoggerFactory.getLogger(Renewer.class);

    private final EngineClient client;
    private final boolean renewal;
    private final long intervalNanos;
    private final long tickNanos;
    private final AtomicBoolean started = new AtomicBoolean();

    Renewer(EngineClient client, Duration leaseTime, boolean renewal) {
        this.client = client;
        this.renewal = renewal;
        long lease = leaseTime.toNanos();
        this.intervalNanos = lease / 3;
        this.tickNanos = Math.max(TimeUnit.MILLISECONDS.toNanos(5), Math.min(TimeUnit.SECONDS.toNanos(1), lease / 30));
    }

    /** Starts watching a grant with a finite validity (until it leaves HELD). Never blocks. */
    void track(Acquisition a) {
        if (a.validUntilNanos() == Long.MAX_VALUE) {
            return;
        }
        if (started.compareAndSet(false, true)) {
            try {
                ScheduledFuture<?> unused = client.scheduleWithFixedDelay(this::tick, tickNanos);
            } catch (RejectedExecutionException e) {
                // closing: the client releases everything anyway
            }
        }
    }

    /** Less validity left than this, and a grant counts as lost. */
    long lossThresholdNanos() {
        return 2 * tickNanos;
    }

    /** Grants watched now: live, HELD, with a finite validity (reads every live acquisition). */
    int tracked() {
        return client.registry.countLive(a -> {
            if (a.state() != LockState.HELD) {
                return false;
            }
            long until = a.validUntilNanos(); // HELD or later: granted, so this does not throw
            return until != Long.MAX_VALUE;
        });
    }

    private void tick() {
        try {
            long now = client.ticker.read();
            client.registry.forEachLive(a -> check(a, now));
        } catch (RuntimeException e) {
            log.warn("[client={}] renewal tick failed", client.backendName, e); // keep ticking
        }
    }

    private void check(Acquisition a, long now) {
        try {
            if (a.state() != LockState.HELD) {
                return;
            }
            long until = a.validUntilNanos();
            if (until == Long.MAX_VALUE) {
                return;
            }
            if (until - now < lossThresholdNanos()) {
                a.lose(
                        LockMetrics.LossCause.EXPIRED,
                        renewal
                                ? "the lease could not be renewed before it ran out"
                                : "the lease ran out (renewal is off)",
                        a.lastRenewalFailure());
            } else if (renewal && now - a.renewedAt >= intervalNanos && a.startRenewal()) {
                renew(a, a.grant(), now);
            }
        } catch (RuntimeException e) {
            log.warn("[lock={}] renewal check failed", a.name, e); // the others are still checked
        }
    }

    private void renew(Acquisition a, Grant g, long sentAt) {
        client.protocol.renew(g).whenComplete((renewed, error) -> {
            a.endRenewal();
            client.metrics.renewal(a, error == null);
            if (error == null) {
                client.requestAnswered();
                a.lastRenewalFailure(null);
                a.renewed(renewed, sentAt);
                return;
            }
            Throwable cause = Acquisition.unwrap(error);
            if (cause instanceof EntryLostException) {
                a.lose(
                        LockMetrics.LossCause.REMOVED,
                        "renewal found the lock gone on the server: " + cause.getMessage(),
                        cause);
            } else {
                client.requestFailed(cause);
                a.lastRenewalFailure(cause);
                log.debug("[lock={} state=HELD] renewal failed, retrying: {}", a.name, cause.toString());
            }
        });
    }
}

/**
 * Leader elections in a Spring application: {@link io.dlock.spring.boot.leader.LeaderElections}
 * (started and stopped with the context), its {@link io.dlock.spring.boot.leader.LeaderElectedEvent}
 * and {@link io.dlock.spring.boot.leader.LeaderRevokedEvent}; the {@code @LeaderOnly} annotation is
 * in {@code io.dlock.spring.boot.annotation}.
 */
@NullMarked
package io.dlock.spring.boot.leader;

import org.jspecify.annotations.NullMarked;

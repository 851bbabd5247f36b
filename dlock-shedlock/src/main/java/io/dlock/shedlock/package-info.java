/**
 * A ShedLock {@code LockProvider} on any dlock backend: {@link io.dlock.shedlock.DLockLockProvider}.
 * An application that uses {@code @SchedulerLock} replaces its {@code LockProvider} bean and keeps
 * every annotation; a task reads its lease, with the fencing token, through {@link
 * io.dlock.shedlock.DLockShedLock#currentLease()}.
 */
@NullMarked
package io.dlock.shedlock;

import org.jspecify.annotations.NullMarked;

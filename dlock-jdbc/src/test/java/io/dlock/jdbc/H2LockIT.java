package io.dlock.jdbc;

import io.dlock.testkit.ExclusiveLockContract;

/** The exclusive lock on H2 (in-process, over its TCP server so child JVMs share it): the testkit's contract. */
class H2LockIT extends H2TestSupport implements ExclusiveLockContract {}

package io.dlock.jdbc;

import io.dlock.testkit.ElectionContract;

/** Leader election on H2: the testkit's contract. */
class H2ElectionIT extends H2TestSupport implements ElectionContract {}

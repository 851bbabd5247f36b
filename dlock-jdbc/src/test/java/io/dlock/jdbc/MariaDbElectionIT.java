package io.dlock.jdbc;

import io.dlock.testkit.ElectionContract;

/** Leader election on MariaDB: the testkit's contract. */
class MariaDbElectionIT extends MariaDbTestSupport implements ElectionContract {}

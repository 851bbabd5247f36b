package io.dlock.jdbc;

/** The operator view (inspect, forced release, watch) on PostgreSQL 15: the testkit's contract and the SQL cases. */
class PostgresInspectIT extends PostgresTestSupport implements JdbcInspectCases {}

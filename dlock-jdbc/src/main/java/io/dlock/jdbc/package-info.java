/**
 * The SQL backend: {@code jdbc:postgresql:}, {@code jdbc:mariadb:}/{@code jdbc:mysql:} and {@code
 * jdbc:h2:} URIs, or the application's {@link javax.sql.DataSource} through {@link
 * io.dlock.jdbc.JdbcLocks}. Locks are rows of a lease table whose expiry the database's clock
 * decides; fencing tokens are incremented by the granting statement and never go down. {@link
 * io.dlock.jdbc.FencedWrites} lets the database itself refuse a former holder's late write.
 *
 * <p>Public: {@link io.dlock.jdbc.JdbcLocks}, {@link io.dlock.jdbc.FencedWrites}, {@link
 * io.dlock.jdbc.StaleTokenException} and the service provider; every other class is internal.
 */
@NullMarked
package io.dlock.jdbc;

import org.jspecify.annotations.NullMarked;

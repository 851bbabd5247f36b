package io.dlock.jdbc;

import io.dlock.testkit.PostgresServer;
import java.util.List;

class PostgresAdversarialIT extends PostgresTestSupport implements JdbcAdversarialCases {

    @Override
    public List<String> urisWithSecret(String secret) {
        String url = postgres.jdbcUrl();
        String t = "&dlockTable=" + table + "&createTable=true&connectTimeout=3s";
        return List.of(
                url + "?user=" + PostgresServer.USER + "&password=" + secret + t,
                url + "?user=nobody&password=" + secret + t,
                url + "?password=" + secret + "&user=" + PostgresServer.USER + t + "&mode=session",
                "jdbc:postgresql://127.0.0.1:1/db?user=u&password=" + secret + t,
                url + "?user=" + PostgresServer.USER + "&password=" + secret + t + "&noSuchParameter=1",
                url + "?user=" + PostgresServer.USER + "&password=" + secret + t + "&leaseTime=1y");
    }
}

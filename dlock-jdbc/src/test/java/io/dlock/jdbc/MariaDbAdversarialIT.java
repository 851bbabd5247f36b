package io.dlock.jdbc;

import io.dlock.testkit.MariaDbServer;
import java.util.List;

class MariaDbAdversarialIT extends MariaDbTestSupport implements JdbcAdversarialCases {

    @Override
    public List<String> urisWithSecret(String secret) {
        String url = mariadb.jdbcUrl();
        String t = "&dlockTable=" + table + "&createTable=true&connectTimeout=3s";
        return List.of(
                url + "?user=" + MariaDbServer.USER + "&password=" + secret + t,
                url + "?user=nobody&password=" + secret + t,
                url + "?password=" + secret + "&user=" + MariaDbServer.USER + t + "&mode=session",
                "jdbc:mariadb://127.0.0.1:1/db?user=u&password=" + secret + t,
                url + "?user=" + MariaDbServer.USER + "&password=" + secret + t + "&noSuchParameter=1",
                url + "?user=" + MariaDbServer.USER + "&password=" + secret + t + "&leaseTime=1y");
    }
}

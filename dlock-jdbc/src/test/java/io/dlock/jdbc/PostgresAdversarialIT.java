package io.dlock.jdbc;

import io.dlock.testkit.AdversarialContract;
import io.dlock.testkit.PostgresServer;
import java.util.List;

class PostgresAdversarialIT extends PostgresTestSupport implements AdversarialContract {

    @Override
    public String longLease() {
        return "leaseTime=20s";
    }

    @Override
    public List<String> neighbourNamespaces() {
        return JdbcAdversarial.TABLES;
    }

    @Override
    public String uriIn(String namespace, String options) {
        return JdbcAdversarial.uriIn(jdbcUrl(), table + "_" + namespace, options);
    }

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

    @Override
    public int serverPort() {
        return postgres.port();
    }

    @Override
    public String uriAt(int port, String options) {
        return JdbcAdversarial.uriIn(
                jdbcUrl().replace("127.0.0.1:" + postgres.port() + "/", "127.0.0.1:" + port + "/"), table, options);
    }
}

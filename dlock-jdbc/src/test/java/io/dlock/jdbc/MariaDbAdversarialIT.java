package io.dlock.jdbc;

import io.dlock.testkit.AdversarialContract;
import io.dlock.testkit.MariaDbServer;
import java.util.List;

class MariaDbAdversarialIT extends MariaDbTestSupport implements AdversarialContract {

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
        String url = mariadb.jdbcUrl();
        String t = "&dlockTable=" + table + "&createTable=true&connectTimeout=3s";
        return List.of(
                url + "?user=" + MariaDbServer.USER + "&password=" + secret + t,
                url + "?user=nobody&password=" + secret + t,
                "jdbc:mariadb://127.0.0.1:1/db?user=u&password=" + secret + t,
                url + "?user=" + MariaDbServer.USER + "&password=" + secret + t + "&noSuchParameter=1",
                url + "?user=" + MariaDbServer.USER + "&password=" + secret + t + "&leaseTime=1y");
    }

    @Override
    public int serverPort() {
        return mariadb.port();
    }

    @Override
    public String uriAt(int port, String options) {
        return JdbcAdversarial.uriIn(
                jdbcUrl().replace("127.0.0.1:" + mariadb.port() + "/", "127.0.0.1:" + port + "/"), table, options);
    }
}

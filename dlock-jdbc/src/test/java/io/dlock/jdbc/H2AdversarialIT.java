package io.dlock.jdbc;

import io.dlock.testkit.AdversarialContract;
import java.util.List;

class H2AdversarialIT extends H2TestSupport implements AdversarialContract {

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
        String t = "?dlockTable=" + table + "&createTable=true&connectTimeout=3s";
        return List.of(
                "jdbc:h2:mem:adv-secret;PASSWORD=" + secret + ";USER=sa" + t,
                "jdbc:h2:mem:adv-secret2;USER=sa;PASSWORD=" + secret + t,
                "jdbc:h2:tcp://127.0.0.1:1/mem:x;USER=sa;PASSWORD=" + secret + t,
                "jdbc:h2:mem:adv-secret3;USER=sa;PASSWORD=" + secret + t + "&noSuchParameter=1",
                "jdbc:h2:mem:adv-secret4;USER=sa;PASSWORD=" + secret + t + "&leaseTime=1y");
    }

    @Override
    public int serverPort() {
        return Integer.parseInt(jdbcUrl().replaceAll(".*127\\.0\\.0\\.1:(\\d+)/.*", "$1"));
    }

    @Override
    public String uriAt(int port, String options) {
        return JdbcAdversarial.uriIn(jdbcUrl().replace(":" + serverPort() + "/", ":" + port + "/"), table, options);
    }
}

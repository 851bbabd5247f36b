package io.dlock.jdbc;

import java.util.List;

class H2AdversarialIT extends H2TestSupport implements JdbcAdversarialCases {

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
}

package io.dlock.jdbc;

import java.sql.SQLException;
import org.h2.tools.Server;

/**
 * H2 as an in-process TCP server (so that child JVMs reach it too), one per JVM, stopped when the
 * JVM exits; it is a library, not a server process the testkit starts.
 */
abstract class H2TestSupport extends JdbcTestSupport {
    private static Server h2;

    @Override
    boolean alive() {
        return true;
    }

    @Override
    public String jdbcUrl() {
        return "jdbc:h2:tcp://127.0.0.1:" + server().getPort() + "/mem:dlock;DB_CLOSE_DELAY=-1";
    }

    private static synchronized Server server() {
        if (h2 == null) {
            try {
                h2 = Server.createTcpServer("-tcpPort", "0", "-ifNotExists").start();
            } catch (SQLException e) {
                throw new IllegalStateException("cannot start H2's TCP server", e);
            }
            Server s = h2;
            Runtime.getRuntime().addShutdownHook(new Thread(s::stop, "h2-stop"));
        }
        return h2;
    }
}

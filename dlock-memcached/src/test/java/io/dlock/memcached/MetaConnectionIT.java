package io.dlock.memcached;

import static org.assertj.core.api.Assertions.assertThat;

import io.dlock.memcached.MetaConnection.Command;
import io.dlock.memcached.MetaConnection.Reply;
import io.dlock.testkit.MemcachedServer;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The meta protocol's framing on a real memcached. */
class MetaConnectionIT {

    @Test
    void set_countsTheDataInUtf8Bytes_notChars() {
        byte[] bytes = Command.set("k", "café ü", "T5").bytes();

        assertThat(new String(bytes, StandardCharsets.UTF_8)).isEqualTo("ms k 8 T5\r\ncafé ü\r\n");
    }

    @Test
    void set_ofDataOutsideAscii_isStoredWhole_andTheConnectionStaysInStep() throws Exception {
        // A host name such as "büro-7" is in the value of every client's info key: counted in chars,
        // the server read one byte short and took the rest of the block as a command.
        try (MemcachedServer server = MemcachedServer.start();
                MetaConnection.IoLoop loop = new MetaConnection.IoLoop("meta-it-io")) {
            MetaConnection c = MetaConnection.open(
                    new InetSocketAddress("127.0.0.1", server.port()), 1, loop, 5_000, closed -> {});
            String value = "büro-7 4242";
            try {
                List<Reply> replies = c.send(
                                List.of(
                                        Command.set("meta-it:info", value, "T60"),
                                        Command.of("mg meta-it:info v"),
                                        Command.of("mn")),
                                System.nanoTime())
                        .get(10, TimeUnit.SECONDS);

                assertThat(replies).extracting(Reply::status).containsExactly("HD", "VA", "MN");
                assertThat(replies.get(1).value()).isEqualTo(value);
                assertThat(c.isOpen()).isTrue();
                assertThat(server.keys("meta-it:")).containsExactly("meta-it:info");
            } finally {
                c.close(null);
            }
        }
    }
}

package io.dlock.cli.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.UncheckedIOException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class StockServerTest {

    private StockServer server;

    @AfterEach
    void closeServer() {
        if (server != null) {
            server.close();
        }
    }

    @Test
    void get_freshServer_returnsInitialStock() {
        server = StockServer.start(20, true);

        assertThat(server.handle(new StockServer.Session(), "GET")).isEqualTo("STOCK 20");
    }

    @Test
    void put_lowerTokenWhenFenced_rejectedWithHighestAndChangesNothing() {
        server = StockServer.start(20, true);
        StockServer.Session a = new StockServer.Session();
        StockServer.Session b = new StockServer.Session();
        server.handle(a, "GET");
        assertThat(server.handle(a, "PUT 19 a 15")).isEqualTo("OK");
        server.handle(b, "GET");

        assertThat(server.handle(b, "PUT 18 b 12")).isEqualTo("REJECTED 15");

        StockServer.Snapshot snapshot = server.snapshot();
        assertThat(snapshot.stock()).isEqualTo(19);
        assertThat(snapshot.sold()).isEqualTo(1);
        assertThat(snapshot.highestToken()).isEqualTo(15);
        assertThat(snapshot.acceptedTokens()).containsExactly(15L);
        assertThat(snapshot.rejections()).containsExactly(new StockServer.Rejection("b", 12, 15, 18, 19));
    }

    @Test
    void put_equalOrHigherTokenWhenFenced_accepted() {
        server = StockServer.start(20, true);
        StockServer.Session a = new StockServer.Session();
        server.handle(a, "GET");
        server.handle(a, "PUT 19 a 7");
        server.handle(a, "GET");

        assertThat(server.handle(a, "PUT 18 a 7")).isEqualTo("OK");
        server.handle(a, "GET");
        assertThat(server.handle(a, "PUT 17 a 8")).isEqualTo("OK");
        assertThat(server.snapshot().acceptedTokens()).containsExactly(7L, 7L, 8L);
        assertThat(server.snapshot().tokensStrictlyIncreasing()).isFalse();
    }

    @Test
    void put_lowerTokenWhenUnfenced_accepted() {
        server = StockServer.start(20, false);
        StockServer.Session a = new StockServer.Session();
        server.handle(a, "GET");
        server.handle(a, "PUT 19 a 15");
        server.handle(a, "GET");

        assertThat(server.handle(a, "PUT 18 a 0")).isEqualTo("OK");
        assertThat(server.snapshot().rejections()).isEmpty();
        assertThat(server.snapshot().stock()).isEqualTo(18);
    }

    @Test
    void put_lostUpdate_countsBothSalesAndOversold() {
        server = StockServer.start(1, false);
        StockServer.Session a = new StockServer.Session();
        StockServer.Session b = new StockServer.Session();
        assertThat(server.handle(a, "GET")).isEqualTo("STOCK 1");
        assertThat(server.handle(b, "GET")).isEqualTo("STOCK 1");

        assertThat(server.handle(a, "PUT 0 a 0")).isEqualTo("OK");
        assertThat(server.handle(b, "PUT 0 b 0")).isEqualTo("OK");

        StockServer.Snapshot snapshot = server.snapshot();
        assertThat(snapshot.stock()).isZero();
        assertThat(snapshot.sold()).isEqualTo(2);
        assertThat(snapshot.oversold()).isEqualTo(1);
        assertThat(snapshot.soldByClient()).containsEntry("a", 1).containsEntry("b", 1);
    }

    @Test
    void put_staleWriteRaisingStock_countsAsSaleAndLetsMoreBeSold() {
        server = StockServer.start(2, false);
        StockServer.Session slow = new StockServer.Session();
        StockServer.Session fast = new StockServer.Session();
        server.handle(slow, "GET"); // reads 2
        server.handle(fast, "GET");
        server.handle(fast, "PUT 1 fast 0");
        server.handle(fast, "GET");
        server.handle(fast, "PUT 0 fast 0");

        assertThat(server.handle(slow, "PUT 1 slow 0")).isEqualTo("OK"); // stock back to 1

        assertThat(server.snapshot().sold()).isEqualTo(3);
        assertThat(server.snapshot().stock()).isEqualTo(1);
        assertThat(server.snapshot().oversold()).isEqualTo(1);
    }

    @Test
    void put_notLowerThanWhatWasRead_notCountedAsSold() {
        server = StockServer.start(5, true);
        StockServer.Session a = new StockServer.Session();
        server.handle(a, "GET");

        assertThat(server.handle(a, "PUT 9 restock 1")).isEqualTo("OK");

        assertThat(server.snapshot().sold()).isZero();
        assertThat(server.snapshot().stock()).isEqualTo(9);
    }

    @Test
    void put_withoutGet_comparedWithCurrentStock() {
        server = StockServer.start(5, true);

        assertThat(server.handle(new StockServer.Session(), "PUT 4 a 1")).isEqualTo("OK");

        assertThat(server.snapshot().sold()).isEqualTo(1);
    }

    @Test
    void oversold_fewerSoldThanStock_isZero() {
        server = StockServer.start(5, true);
        StockServer.Session a = new StockServer.Session();
        server.handle(a, "GET");
        server.handle(a, "PUT 4 a 1");

        assertThat(server.snapshot().oversold()).isZero();
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                "",
                "   ",
                "FOO",
                "get",
                "GET 1",
                "PUT",
                "PUT 1 a",
                "PUT 1 a 2 3",
                "PUT x a 1",
                "PUT -1 a 1",
                "PUT 1 a x",
                "PUT 1 a -1",
                "PUT 1 bad/client 1",
                "PUT 99999999999 a 1",
            })
    void handle_badCommand_errorLineAndChangesNothing(String line) {
        server = StockServer.start(20, true);
        StockServer.Session a = new StockServer.Session();
        server.handle(a, "GET");
        server.handle(a, "PUT 19 a 5");
        StockServer.Snapshot before = server.snapshot();

        String response = server.handle(a, line);

        assertThat(response).startsWith("ERROR ");
        assertThat(server.snapshot()).isEqualTo(before);
    }

    @Test
    void handle_overlongLine_errorAndChangesNothing() {
        server = StockServer.start(20, true);
        StockServer.Snapshot before = server.snapshot();

        assertThat(server.handle(new StockServer.Session(), "PUT 1 " + "a".repeat(300) + " 1"))
                .startsWith("ERROR line longer than");
        assertThat(server.snapshot()).isEqualTo(before);
    }

    @Test
    void network_getPutAndReject_overTcp() {
        server = StockServer.start(3, true);
        try (StockClient a = StockClient.connect(server.port());
                StockClient b = StockClient.connect(server.port())) {
            assertThat(a.get()).isEqualTo(3);
            assertThat(b.get()).isEqualTo(3);
            assertThat(b.put(2, "b", 11)).isEqualTo(new StockClient.PutResult(true, 11));

            assertThat(a.put(2, "a", 10)).isEqualTo(new StockClient.PutResult(false, 11));
            assertThat(a.get()).isEqualTo(2);
        }
        assertThat(server.snapshot().sold()).isEqualTo(1);
        assertThat(server.snapshot().soldByClient()).containsOnlyKeys("b");
    }

    @Test
    void network_badLine_errorAndConnectionStaysUsable() {
        server = StockServer.start(3, true);
        try (StockClient client = StockClient.connect(server.port())) {
            assertThat(client.request("SELL 1")).startsWith("ERROR unknown command 'SELL'");
            assertThat(client.get()).isEqualTo(3);
            assertThatThrownBy(() -> client.put(-1, "a", 1))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("newValue must be >= 0");
            assertThat(client.get()).isEqualTo(3);
        }
    }

    @Test
    void close_openConnection_clientSeesClosedConnection() {
        server = StockServer.start(3, true);
        try (StockClient client = StockClient.connect(server.port())) {
            assertThat(client.get()).isEqualTo(3);

            server.close();

            assertThatThrownBy(client::get).isInstanceOf(UncheckedIOException.class);
        }
    }

    @Test
    void start_negativeStock_throwsIllegalArgument() {
        assertThatThrownBy(() -> StockServer.start(-1, true))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("-1");
    }
}

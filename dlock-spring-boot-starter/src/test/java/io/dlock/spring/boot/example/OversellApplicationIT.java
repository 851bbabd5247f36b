package io.dlock.spring.boot.example;

import static org.assertj.core.api.Assertions.assertThat;

import io.dlock.testkit.EmbeddedZooKeeper;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/** Two nodes of the example service on one ZooKeeper, one shared store, 150 buyers for 100 units. */
class OversellApplicationIT {
    static EmbeddedZooKeeper zk;

    @BeforeAll
    static void start() {
        zk = EmbeddedZooKeeper.start();
    }

    @AfterAll
    static void stop() {
        zk.close();
    }

    private static ConfigurableApplicationContext node(OversellApplication.FencedStock shared) {
        return new SpringApplicationBuilder(OversellApplication.class)
                .initializers(ctx -> ctx.getBeanFactory().registerSingleton("stock", shared))
                .run(
                        "--server.port=0",
                        "--server.address=127.0.0.1",
                        "--dlock.uri=" + zk.uri("shop"),
                        "--management.endpoints.web.exposure.include=health,dlock",
                        "--management.endpoint.health.show-components=always");
    }

    private static int port(ConfigurableApplicationContext ctx) {
        return Integer.parseInt(ctx.getEnvironment().getProperty("local.server.port"));
    }

    @Test
    void concurrentBuyersOnTwoNodes_neverOversell() throws Exception {
        OversellApplication.FencedStock shared = new OversellApplication.FencedStock(100);
        HttpClient http =
                HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
        try (ConfigurableApplicationContext a = node(shared);
                ConfigurableApplicationContext b = node(shared)) {
            List<CompletableFuture<HttpResponse<String>>> calls = new ArrayList<>();
            for (int i = 0; i < 150; i++) {
                int port = port(i % 2 == 0 ? a : b);
                calls.add(http.sendAsync(
                        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/buy/widget"))
                                .POST(HttpRequest.BodyPublishers.noBody())
                                .timeout(Duration.ofSeconds(60))
                                .build(),
                        HttpResponse.BodyHandlers.ofString()));
            }
            int sold = 0;
            int soldOut = 0;
            for (CompletableFuture<HttpResponse<String>> c : calls) {
                HttpResponse<String> r = c.get(90, TimeUnit.SECONDS);
                if (r.statusCode() == 200) {
                    sold++;
                } else {
                    assertThat(r.statusCode()).as(r.body()).isEqualTo(409);
                    soldOut++;
                }
            }
            assertThat(sold).isEqualTo(100);
            assertThat(soldOut).isEqualTo(50);
            assertThat(shared.units()).isZero();
            assertThat(shared.refused()).isZero();

            HttpResponse<String> health = http.send(
                    HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port(a) + "/actuator/health"))
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(health.statusCode()).isEqualTo(200);
            assertThat(health.body()).contains("\"dlock\":{\"status\":\"UP\"");
            HttpResponse<String> locks = http.send(
                    HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port(b) + "/actuator/dlock"))
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(locks.statusCode()).isEqualTo(200);
            assertThat(locks.body()).contains("\"held\":[]").contains("\"waiting\":[]");
        }
    }
}

package io.dlock.spring.boot.example;

import io.dlock.spring.boot.annotation.DistributedLock;
import io.dlock.spring.boot.annotation.DistributedLocks;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.stereotype.Service;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * The oversell scenario as a small REST service: {@code POST /buy/{item}} sells one unit while
 * stock lasts. Without the lock, concurrent buyers on several nodes read the same stock and sell
 * more than there is; with it, and with the fencing token passed to the store, they cannot.
 *
 * <pre>{@code
 * java -cp ... io.dlock.spring.boot.example.OversellApplication --dlock.uri=zookeeper://127.0.0.1:2181/shop
 * }</pre>
 */
@SpringBootApplication
public class OversellApplication {
    public static void main(String[] args) {
        SpringApplication.run(OversellApplication.class, args);
    }

    @Bean
    @ConditionalOnMissingBean
    FencedStock stock() {
        return new FencedStock(100);
    }

    /** The stock, one item, in a store that refuses writes carrying an older fencing token than the last. */
    public static final class FencedStock {
        private int units;
        private long lastToken;
        private int refused;

        public FencedStock(int units) {
            this.units = units;
        }

        public synchronized int units() {
            return units;
        }

        public synchronized int refused() {
            return refused;
        }

        synchronized void write(int newUnits, long token) {
            if (token <= lastToken) {
                refused++;
                throw new IllegalStateException("stale fencing token " + token + " <= " + lastToken);
            }
            lastToken = token;
            units = newUnits;
        }
    }

    @Service
    public static class Inventory {
        private final FencedStock stock;

        public Inventory(FencedStock stock) {
            this.stock = stock;
        }

        /** Sells one unit; false when sold out. */
        @DistributedLock(key = "'stock:' + #item", waitTime = "30s")
        public boolean buy(String item) {
            long token = DistributedLocks.currentLease().fencingToken();
            int left = stock.units();
            if (left == 0) {
                return false;
            }
            Thread.yield(); // the read-modify-write window the lock closes
            stock.write(left - 1, token);
            return true;
        }
    }

    @RestController
    public static class ShopController {
        private final Inventory inventory;
        private final FencedStock stock;

        public ShopController(Inventory inventory, FencedStock stock) {
            this.inventory = inventory;
            this.stock = stock;
        }

        @PostMapping("/buy/{item}")
        public ResponseEntity<String> buy(@PathVariable String item) {
            return inventory.buy(item)
                    ? ResponseEntity.ok("sold")
                    : ResponseEntity.status(HttpStatus.CONFLICT).body("sold out");
        }

        @GetMapping("/stock")
        public int stock() {
            return stock.units();
        }
    }
}

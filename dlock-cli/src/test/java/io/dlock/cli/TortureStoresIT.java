package io.dlock.cli;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The CI-sized torture of {@link TortureIT} on an embedded redis-server, PostgreSQL and memcached:
 * 45 s each with every fault kind, in fenced mode.
 */
@Tag("torture")
class TortureStoresIT {

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"embedded:redis", "embedded:postgres", "embedded:memcached"})
    @Timeout(value = 110, unit = TimeUnit.SECONDS)
    void torture_allFaultsFenced_passes(String uri) {
        TortureRuns.allFaultsFenced(uri);
    }
}

package io.dlock.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import io.dlock.spring.boot.autoconfigure.DLockActuatorAutoConfiguration;
import io.dlock.spring.boot.autoconfigure.DLockActuatorHealthAutoConfiguration;
import io.dlock.spring.boot.autoconfigure.DLockAutoConfiguration;
import io.dlock.spring.boot.autoconfigure.DLockHealthAutoConfiguration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.context.annotation.ImportCandidates;

/**
 * The starter's {@code META-INF/spring/...AutoConfiguration.imports} as Spring Boot reads it, and
 * the class path the health configurations choose by: this line's health types and not the other
 * line's.
 */
class AutoConfigurationImportsTest {
    private static final String BOOT3_HEALTH = "org.springframework.boot.actuate.health.HealthIndicator";
    private static final String BOOT4_HEALTH = "org.springframework.boot.health.contributor.HealthIndicator";

    @Test
    void importsFile_listsEveryAutoConfigurationOfBothLines() {
        List<String> names = new ArrayList<>();
        ImportCandidates.load(AutoConfiguration.class, getClass().getClassLoader())
                .forEach(names::add);
        assertThat(names)
                .filteredOn(n -> n.startsWith("io.dlock."))
                .containsExactly(
                        DLockAutoConfiguration.class.getName(),
                        DLockActuatorAutoConfiguration.class.getName(),
                        DLockActuatorHealthAutoConfiguration.class.getName(),
                        DLockHealthAutoConfiguration.class.getName());
    }

    @Test
    void classPath_hasThisLinesHealthTypesOnly() {
        boolean boot4 = BootLine.HEALTH_INDICATOR.getPackageName().endsWith(".health");
        assertThat(present(BOOT4_HEALTH)).as(BOOT4_HEALTH).isEqualTo(boot4);
        assertThat(present(BOOT3_HEALTH)).as(BOOT3_HEALTH).isEqualTo(!boot4);
    }

    private static boolean present(String className) {
        try {
            Class.forName(className, false, AutoConfigurationImportsTest.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException e) {
            return false;
        }
    }
}

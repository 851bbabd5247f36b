package io.dlock.cli.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;
import picocli.CommandLine;

class DurationConverterTest {

    @ParameterizedTest
    @CsvSource({"3s,3000", "1500ms,1500", "2m,120000", "1h,3600000", "PT3S,3000", " 4S ,4000", "0s,0"})
    void parse_validText_returnsDuration(String text, long millis) {
        assertThat(DurationConverter.parse(text)).isEqualTo(Duration.ofMillis(millis));
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "3", "s", "-3s", "3 seconds", "3.5s", "PTxS"})
    void parse_invalidText_throwsTypeConversion(String text) {
        assertThatThrownBy(() -> DurationConverter.parse(text))
                .isInstanceOf(CommandLine.TypeConversionException.class)
                .hasMessageContaining("is not a duration");
    }

    @Test
    void toParameter_wholeSecondsOrMillis() {
        assertThat(DurationConverter.toParameter(Duration.ofSeconds(3))).isEqualTo("3s");
        assertThat(DurationConverter.toParameter(Duration.ofMillis(1500))).isEqualTo("1500ms");
    }

    @Test
    void toSeconds_oneDecimal() {
        assertThat(DurationConverter.toSeconds(Duration.ofMillis(3149))).isEqualTo("3.1 s");
    }
}

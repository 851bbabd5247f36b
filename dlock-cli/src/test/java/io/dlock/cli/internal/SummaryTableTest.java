package io.dlock.cli.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

class SummaryTableTest {

    @Test
    void render_rows_alignedUnderHeader() {
        String table = SummaryTable.render(List.of(
                new RoundResult(1, "no lock", 20, 57, 37, 0, "lost updates", List.of()),
                new RoundResult(4, "dlock + GC pause", 20, 20, 0, 1, "rejected: token 12 < 15", List.of())));

        List<String> lines = table.lines().toList();
        assertThat(lines).hasSize(4);
        assertThat(lines.get(0)).startsWith("Round | Mode             | Stock | Sold | Oversold |");
        assertThat(lines.get(2))
                .isEqualTo("    1 | no lock          |    20 |   57 |       37 |                     0 | lost updates");
        assertThat(lines.get(3)).endsWith("|                     1 | rejected: token 12 < 15");
        int firstBar = lines.get(0).indexOf('|');
        assertThat(lines).allSatisfy(line -> assertThat(line.indexOf('|')).isEqualTo(firstBar));
    }
}

package io.dlock.cli.internal.report;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dlock.cli.internal.report.Timeline.Outcome;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

class TimelineTest {

    private static final long SECOND = 1_000_000_000L;
    private static final Pattern BAR = Pattern.compile("<rect class=\"bar ([a-z-]+)\" data-n=\"(\\d+)\"");

    private static int count(String html, String needle) {
        int n = 0;
        for (int i = html.indexOf(needle); i >= 0; i = html.indexOf(needle, i + 1)) {
            n++;
        }
        return n;
    }

    @Test
    void section_farApart_oneBarEach() {
        Timeline t = new Timeline("t", 0, 10 * SECOND);
        t.section("w1", 0, SECOND / 100, Outcome.ACCEPTED);
        t.section("w1", 5 * SECOND, 5 * SECOND + SECOND / 100, Outcome.ACCEPTED);
        t.section("w2", 2 * SECOND, 3 * SECOND, Outcome.REFUSED_STALE);

        String html = t.html();
        assertThat(t.lanes()).isEqualTo(2);
        assertThat(t.sections()).isEqualTo(3);
        assertThat(t.bars()).isEqualTo(3);
        assertThat(count(html, "<g class=\"lane\"")).isEqualTo(2);
        assertThat(count(html, "<rect class=\"bar accepted\"")).isEqualTo(2);
        assertThat(count(html, "<rect class=\"bar refused-stale\"")).isEqualTo(1);
        assertThat(html).contains("data-lanes=\"2\" data-sections=\"3\" data-bars=\"3\"");
    }

    @Test
    void section_manyWithinAPixel_mergedIntoOneBarThatCountsThem() {
        Timeline t = new Timeline("t", 0, 1000 * SECOND); // one pixel = 1 s
        for (int i = 0; i < 1000; i++) {
            long at = i * 1_000_000L; // 1000 sections within the first second
            t.section("w1", at, at + 500_000, Outcome.ACCEPTED);
        }

        assertThat(t.sections()).isEqualTo(1000);
        assertThat(t.bars()).isEqualTo(1);
        Matcher m = BAR.matcher(t.html());
        assertThat(m.find()).isTrue();
        assertThat(m.group(2)).isEqualTo("1000");
        assertThat(m.find()).isFalse();
    }

    @Test
    void section_otherOutcomeWithinThePixel_joinsAndShowsTheWorst() {
        Timeline t = new Timeline("t", 0, 1000 * SECOND);
        t.section("w1", 0, 1000, Outcome.ACCEPTED);
        t.section("w1", 2000, 3000, Outcome.OVERLAP);
        t.section("w1", 4000, 5000, Outcome.ACCEPTED);

        assertThat(t.bars()).isEqualTo(1);
        assertThat(t.html())
                .contains("<rect class=\"bar overlap\" data-n=\"3\"")
                .contains("2 accepted, 0 refused, 1 overlap");
    }

    @Test
    void section_alternatingOutcomesForALongRun_boundedByThePixelWidth() {
        Timeline t = new Timeline("t", 0, 3600 * SECOND);
        int sections = 200_000;
        for (int i = 0; i < sections; i++) {
            long at = i * (3600 * SECOND / sections);
            t.section("w" + (i % 3), at, at + 1_000_000, i % 2 == 0 ? Outcome.ACCEPTED : Outcome.REFUSED_STALE);
        }

        assertThat(t.sections()).isEqualTo(sections);
        assertThat(t.bars()).isLessThanOrEqualTo(3 * (Timeline.WIDTH + 1));
        String html = t.html();
        int drawn = 0;
        Matcher m = BAR.matcher(html);
        while (m.find()) {
            drawn += Integer.parseInt(m.group(2));
        }
        assertThat(drawn).isEqualTo(sections);
        assertThat(html.length()).isLessThan(1_000_000);
    }

    @Test
    void html_namesAndLabels_escaped() {
        Timeline t = new Timeline("<b>title</b>", 0, SECOND);
        t.section("<script>alert('x')</script>", 0, 1000, Outcome.ACCEPTED);
        t.fault(null, 0, SECOND / 2, "pause \"w1\" & <more>", 100);
        t.loss("<script>alert('x')</script>", SECOND / 2, "token <7>");

        String html = t.html();
        assertThat(html).doesNotContain("<script>").doesNotContain("<b>").doesNotContain("<more>");
        assertThat(html)
                .contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;")
                .contains("pause &quot;w1&quot; &amp; &lt;more&gt;")
                .contains("recovered in 0.1s")
                .contains("token &lt;7&gt;");
        assertThat(t.faults()).isEqualTo(1);
        assertThat(t.losses()).isEqualTo(1);
    }

    @Test
    void constructor_endNotAfterStart_rejected() {
        assertThatThrownBy(() -> new Timeline("t", 5, 5))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("must end after it starts");
    }

    @Test
    void escape_everySpecialCharacter() {
        assertThat(Html.escape("a&b<c>d\"e'f")).isEqualTo("a&amp;b&lt;c&gt;d&quot;e&#39;f");
    }
}

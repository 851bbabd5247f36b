package io.dlock.cli.internal;

import java.util.ArrayList;
import java.util.List;

/**
 * Renders the rounds of {@code dlock demo} as a plain-text table with aligned columns.
 *
 * <p>Thread-safety: stateless; safe from any thread.
 */
public final class SummaryTable {

    private static final List<String> HEADER =
            List.of("Round", "Mode", "Stock", "Sold", "Oversold", "Stale writes rejected", "Notes");

    private SummaryTable() {}

    /**
     * Renders {@code rounds}, one row each, under a header and a rule.
     *
     * @param rounds the rounds in order
     * @return the table, lines separated by {@code \n}, ending with one
     */
    public static String render(List<RoundResult> rounds) {
        List<List<String>> rows = new ArrayList<>();
        rows.add(HEADER);
        for (RoundResult round : rounds) {
            rows.add(List.of(
                    String.valueOf(round.number()),
                    round.mode(),
                    String.valueOf(round.stock()),
                    String.valueOf(round.sold()),
                    String.valueOf(round.oversold()),
                    String.valueOf(round.staleWritesRejected()),
                    round.notes()));
        }
        int[] widths = new int[HEADER.size()];
        for (List<String> row : rows) {
            for (int i = 0; i < row.size(); i++) {
                widths[i] = Math.max(widths[i], row.get(i).length());
            }
        }
        StringBuilder text = new StringBuilder();
        for (int r = 0; r < rows.size(); r++) {
            appendRow(text, rows.get(r), widths);
            if (r == 0) {
                List<String> rule = new ArrayList<>();
                for (int width : widths) {
                    rule.add("-".repeat(width));
                }
                appendRow(text, rule, widths);
            }
        }
        return text.toString();
    }

    private static void appendRow(StringBuilder text, List<String> cells, int[] widths) {
        StringBuilder line = new StringBuilder();
        for (int i = 0; i < cells.size(); i++) {
            if (i > 0) {
                line.append(" | ");
            }
            String cell = cells.get(i);
            boolean numeric = i != 1 && i != cells.size() - 1;
            String pad = " ".repeat(widths[i] - cell.length());
            line.append(numeric ? pad + cell : cell + pad);
        }
        text.append(line.toString().stripTrailing()).append('\n');
    }
}

/** Plain-text tables: left-aligned columns separated by two spaces, no trailing blanks. */
export function formatTable(header: readonly string[] | undefined, rows: readonly (readonly string[])[]): string {
  const all = header ? [header, ...rows] : rows;
  const widths: number[] = [];
  for (const row of all) row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, visibleLength(cell))));
  return all
    .map((row) =>
      row
        .map((cell, i) => (i === row.length - 1 ? cell : pad(cell, widths[i]!)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

function pad(text: string, width: number): string {
  return text + ' '.repeat(Math.max(0, width - visibleLength(text)));
}

const ANSI = /\u001b\[[0-9;]*m/g;

export function visibleLength(text: string): number {
  return text.replace(ANSI, '').length;
}

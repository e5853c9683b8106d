/**
 * How the probe prints what it reads: sections behind a mark, file contents behind a prefix so no
 * line of a host's file can pass for one of the probe's own, an end mark once it has said
 * everything. The probe script (src/render/probe-script.ts) and the parsers here share these words.
 */

export const SECTION_MARK = '@@ibfleet';
/** The probe's last line: once it is out, the facts are complete and a change can be decided. */
export const PROBE_END = `${SECTION_MARK} end`;
/** Probe output format: 3 prints file contents line by line behind CONTENT_PREFIX. */
export const PROBE_VERSION = 3;
/** Marks a line of a file's content in the probe's output. */
export const CONTENT_PREFIX = '|';
/** Lines of each file's header the probe reads (path, generator line, warning). */
export const HEADER_LINES = 4;

/** Splits probe output into sections keyed by the text after the marker ("route-get ib0"). */
export function splitSections(output: string): Map<string, string[]> {
  const sections = new Map<string, string[]>();
  let current: string[] | undefined;
  for (const line of output.split('\n')) {
    if (line.startsWith(`${SECTION_MARK} `)) {
      current = [];
      sections.set(line.slice(SECTION_MARK.length + 1).trim(), current);
    } else current?.push(line);
  }
  for (const lines of sections.values()) while (lines.length && lines[lines.length - 1]!.trim() === '') lines.pop();
  return sections;
}

/** A file's lines as the probe printed them (behind CONTENT_PREFIX); other lines are the probe's own. */
export function contentLines(lines: readonly string[]): string[] {
  return lines.flatMap((l) => (l.startsWith(CONTENT_PREFIX) ? [l.slice(CONTENT_PREFIX.length)] : []));
}

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

const SECTION_START = `${SECTION_MARK} `;

/** Splits probe output into sections keyed by the text after the marker ("route-get ib0"). */
export function splitSections(output: string): Map<string, string[]> {
  const sections = new Map<string, string[]>();
  let current: string[] | undefined;
  for (const line of output.split('\n')) {
    if (line.startsWith(SECTION_START)) {
      current = [];
      sections.set(line.slice(SECTION_START.length).trim(), current);
    } else current?.push(line);
  }
  for (const lines of sections.values()) while (lines.length && lines[lines.length - 1]!.trim() === '') lines.pop();
  return sections;
}

/** A file's lines as the probe printed them (behind CONTENT_PREFIX); other lines are the probe's own. */
export function contentLines(lines: readonly string[]): string[] {
  const out: string[] = [];
  for (const l of lines) if (l.startsWith(CONTENT_PREFIX)) out.push(l.slice(CONTENT_PREFIX.length));
  return out;
}

/** What each of the probe's sections prints, for a person (a section not here is named by its mark). */
const SECTION_WHAT: Readonly<Record<string, string>> = {
  os: '/etc/os-release',
  hostname: 'the host name (/proc/sys/kernel/hostname)',
  ip: 'the interfaces, addresses, rules and routes `ip` lists',
  config: "the lines of the network managers' configuration files that name interfaces",
  nm: "NetworkManager's profiles as nmcli lists them",
  netplan: 'the netplan files',
};

/** The part of a probe's output that made it too long: what it printed, and how much of it came before the cut. */
export interface LargePart {
  /** The file it printed (os-release, one of ibfleet's files, a netplan file) or what it lists. */
  readonly what: string;
  /** Characters of it received before ibfleet stopped reading: the part is at least this long. */
  readonly size: number;
}

/**
 * What made a probe's output too long to read, from what was kept of it: `head`, its first
 * characters, and `tail`, its last, which start at `tailStart` characters into it. The part of the
 * tail each section holds is measured (the part before the tail's first mark belongs to the last
 * mark before it, found in the head), and the largest is named with its size as far as it was
 * read. Undefined when no mark was printed before the largest part: the host printed it before the
 * probe began (a start-up file). Pure.
 */
export function largestProbePart(head: string, tail: string, tailStart: number): LargePart | undefined {
  const marks = (text: string, offset: number) =>
    [...text.matchAll(new RegExp(`^${SECTION_MARK} (.*)$`, 'gm'))].map((m) => ({ name: m[1]!, at: offset + m.index }));
  const inTail = marks(tail, tailStart);
  const before = marks(head, 0).filter((m) => m.at < tailStart);
  const parts = [
    {
      name: before.at(-1)?.name,
      from: tailStart,
      to: inTail[0]?.at ?? tailStart + tail.length,
      headFrom: before.at(-1)?.at,
    },
    ...inTail.map((m, i) => ({
      name: m.name as string | undefined,
      from: m.at,
      to: inTail[i + 1]?.at ?? tailStart + tail.length,
    })),
  ];
  const largest = parts.reduce((a, b) => (b.to - b.from > a.to - a.from ? b : a));
  if (largest.name === undefined) return undefined;
  // The part's text as far as it was kept: its start in the head too when it began before the tail.
  const headFrom = 'headFrom' in largest ? largest.headFrom : undefined;
  const headPart = headFrom !== undefined ? head.slice(headFrom) : '';
  const text = headPart + tail.slice(Math.max(0, largest.from - tailStart), largest.to - tailStart);
  return { what: partName(largest.name.trim(), text), size: largest.to - (headFrom ?? largest.from) };
}

/** A probe section for a person: the file it printed, or what it lists (SECTION_WHAT), from its mark and its text. */
function partName(name: string, text: string): string {
  const file = /^(?:content|head) (\/.*)$/.exec(name)?.[1];
  if (file) return file;
  if (name === 'netplan') {
    const netplanFile = [...text.matchAll(/^#file (\/.*)$/gm)].at(-1)?.[1];
    if (netplanFile) return `the netplan file ${netplanFile}`;
  }
  return SECTION_WHAT[name] ?? `the probe's section "${name}"`;
}

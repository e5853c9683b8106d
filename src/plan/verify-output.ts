/**
 * What verify's scripts print, read: a host's capabilities (an RDMA device, rping), and cell
 * results framed between CELL_MARK lines, as they stream in or from a finished script. Pure.
 */
import { PING_COUNT } from '../render/verify-commands.js';
import { CELL_END_MARK, FPING_END_MARK, FPING_MARK, NEIGH_END_MARK, NEIGH_MARK } from '../render/verify-scripts.js';
import type { ProberKind } from '../vocabulary.js';
import { parsePing, type ToolVerdict } from './matrix.js';

export interface Capabilities {
  readonly rdmaDevices: readonly string[];
  readonly rping: boolean;
  readonly ping: boolean;
  /** python3 that opened a raw ICMP socket. */
  readonly python3: boolean;
  readonly fping: boolean;
}

/** The prober a host runs: the best it has (the fallback, ping, also where it has nothing better). */
export function chooseProber(caps: Pick<Capabilities, 'python3' | 'fping'>): ProberKind {
  return caps.python3 ? 'python3' : caps.fping ? 'fping' : 'ping';
}

export function parseCapabilities(output: string): Capabilities {
  const value = (key: string) => new RegExp(`^${key}=(.*)$`, 'm').exec(output)?.[1]?.trim() ?? '';
  return {
    rdmaDevices: value('rdma-devices').split(/\s+/).filter(Boolean),
    rping: value('rping') !== '',
    ping: value('ping') !== '',
    python3: value('python3') === 'yes',
    fping: value('fping') !== '',
  };
}

/** Why a host cannot take part in an rping cell, or undefined when it can. */
export function rpingUnavailable(host: string, caps: Capabilities): string | undefined {
  if (caps.rdmaDevices.length === 0) return `no RDMA device on ${host} (/sys/class/infiniband is empty)`;
  if (!caps.rping) return `rping is not installed on ${host} (apt install rdmacm-utils)`;
  return undefined;
}

export interface CellOutput {
  readonly id: number;
  readonly exitCode: number | null;
  readonly output: string;
}

/** Reads cell results line by line as they stream in; `onCell` fires as each one ends. */
export class CellStream {
  private current: { id: number; exitCode: number | null; lines: string[] } | undefined;
  constructor(private readonly onCell: (cell: CellOutput) => void) {}

  push(line: string): void {
    const mark = /^@@cell (\d+) (\d*)$/.exec(line);
    if (mark) {
      this.current = { id: Number(mark[1]), exitCode: mark[2] === '' ? null : Number(mark[2]), lines: [] };
    } else if (line === CELL_END_MARK && this.current) {
      const { id, exitCode, lines } = this.current;
      this.current = undefined;
      this.onCell({ id, exitCode, output: lines.join('\n') });
    } else this.current?.lines.push(line);
  }
}

/** All cell results of a finished script. */
export function parseCellOutput(output: string): Map<number, CellOutput> {
  const results = new Map<number, CellOutput>();
  const stream = new CellStream((c) => results.set(c.id, c));
  for (const line of output.split('\n')) stream.push(line);
  return results;
}

/** What a cell's probes met besides replies, as the prober saw it. */
export type ProbeNote =
  | { readonly kind: 'from'; readonly address: string }
  | { readonly kind: 'unreachable'; readonly from: string; readonly text: string }
  | { readonly kind: 'error'; readonly text: string };

/** One ping cell's result from any prober. */
export interface ProbeOutcome {
  readonly id: number;
  readonly verdict: ToolVerdict;
  readonly note?: ProbeNote;
}

/** A line of `ip -4 neigh show`: what an address resolved to on one NIC. */
export interface NeighbourEntry {
  readonly address: string;
  readonly dev: string;
  readonly lladdr?: string;
  readonly state: string;
}

const IP = String.raw`(?:\d{1,3}\.){3}\d{1,3}`;
const UNREACH_CODES: Readonly<Record<number, string>> = {
  0: 'network unreachable',
  1: 'host unreachable',
  3: 'port unreachable',
  9: 'network prohibited',
  10: 'host prohibited',
  13: 'administratively prohibited',
};

/** `3/3 replies, avg 0.050 ms`, as parsePing says it, from counts. */
function countsVerdict(sent: number, got: number, avgMs: number | undefined, note?: ProbeNote): ToolVerdict {
  const ok = sent > 0 && got === sent && note?.kind !== 'from';
  const avg = avgMs !== undefined && got > 0 ? `, avg ${avgMs.toFixed(3)} ms` : '';
  const lost = got < sent && got > 0 ? ` (${sent - got} lost)` : '';
  const said =
    note?.kind === 'from' ? ` — an answer came from ${note.address}` : note && got < sent ? ` — ${note.text}` : '';
  return { ok, detail: `${got}/${sent} replies${avg}${lost}${said}` };
}

/** host/ibfleet-probe.py's note field, strictly: anything else reads as no note. */
function readNote(text: string): ProbeNote | undefined {
  let m = new RegExp(`^from:(${IP})$`).exec(text);
  if (m) return { kind: 'from', address: m[1]! };
  m = new RegExp(`^unreach:(\\d{1,3}):(${IP})$`).exec(text);
  if (m) {
    const what = UNREACH_CODES[Number(m[1])] ?? `unreachable (code ${m[1]})`;
    return { kind: 'unreachable', from: m[2]!, text: `${what} (from ${m[2]})` };
  }
  m = new RegExp(`^ttl:(${IP})$`).exec(text);
  if (m) return { kind: 'unreachable', from: m[1]!, text: `time exceeded (from ${m[1]})` };
  m = /^err:([A-Z][A-Z0-9]{0,19}|\d{1,5})$/.exec(text);
  if (m) return { kind: 'error', text: `sending failed: ${m[1]}` };
  return undefined;
}

/**
 * Reads a ping run's output as it streams, whichever prober wrote it: python3's `r` lines, fping's
 * per-source frames, ping's `@@cell` frames, and the neighbour sections after each part. Host text
 * is hostile: a line that is not exactly one of these is ignored, counts are bounded by PING_COUNT,
 * and a cell only counts when `known` says the host was given it (fping's by source and target).
 */
export class ProbeStream {
  private readonly cells: CellStream;
  private fping: string | undefined;
  private neighbours: NeighbourEntry[] | undefined;

  constructor(
    private readonly onOutcome: (outcome: ProbeOutcome) => void,
    private readonly onNeighbours: (entries: readonly NeighbourEntry[]) => void,
    private readonly cellOf: (source: string, destination: string) => number | undefined,
  ) {
    this.cells = new CellStream((c) =>
      this.onOutcome({ id: c.id, verdict: parsePing(c.output, c.exitCode), ...pingNote(c.output) }),
    );
  }

  push(line: string): void {
    if (this.neighbours !== undefined) {
      if (line === NEIGH_END_MARK) {
        const entries = this.neighbours;
        this.neighbours = undefined;
        this.onNeighbours(entries);
      } else {
        const entry = parseNeighbour(line);
        if (entry && this.neighbours.length < 65536) this.neighbours.push(entry);
      }
      return;
    }
    if (line === NEIGH_MARK) {
      this.neighbours = [];
      return;
    }
    const fpingStart = new RegExp(`^${FPING_MARK} (${IP}) \\d{1,3}$`).exec(line);
    if (fpingStart) this.fping = fpingStart[1];
    else if (line === FPING_END_MARK) this.fping = undefined;
    else if (this.fping !== undefined) this.fpingLine(this.fping, line);
    else if (line.startsWith('r ')) this.probeLine(line);
    else this.cells.push(line);
  }

  /** `r ID SENT GOT AVG_US NOTE` from host/ibfleet-probe.py. */
  private probeLine(line: string): void {
    const m = /^r (\d{1,9}) (\d{1,3}) (\d{1,3}) (\d{1,12}|-) (\S{1,40})$/.exec(line);
    if (!m) return;
    const [sent, got] = [Number(m[2]), Number(m[3])];
    if (sent > PING_COUNT || got > sent) return;
    const note = readNote(m[5]!);
    const avg = m[4] === '-' ? undefined : Number(m[4]) / 1000;
    this.onOutcome({ id: Number(m[1]), verdict: countsVerdict(sent, got, avg, note), ...(note ? { note } : {}) });
  }

  /** fping -C: `ADDR : 0.05 0.04 -`, one value per echo. */
  private fpingLine(source: string, line: string): void {
    const m = new RegExp(`^(${IP})\\s+: ((?:[\\d.]{1,12}|-)(?: (?:[\\d.]{1,12}|-)){0,${PING_COUNT - 1}})$`).exec(line);
    if (!m) return;
    const id = this.cellOf(source, m[1]!);
    if (id === undefined) return;
    const values = m[2]!.split(' ');
    const times = values.filter((v) => v !== '-').map(Number);
    if (times.some((t) => !Number.isFinite(t))) return;
    const avg = times.length ? times.reduce((a, b) => a + b, 0) / times.length : undefined;
    this.onOutcome({ id, verdict: countsVerdict(PING_COUNT, times.length, avg) });
  }
}

/** An ICMP error ping printed (`From 172.16.16.1 icmp_seq=1 Destination Host Unreachable`). */
function pingNote(output: string): { note?: ProbeNote } {
  const m = new RegExp(
    `^From (${IP})(?: icmp_seq=\\d+)? (Destination [A-Za-z ]{1,40}|Time to live exceeded)$`,
    'm',
  ).exec(output);
  return m ? { note: { kind: 'unreachable', from: m[1]!, text: `${m[2]!.toLowerCase()} (from ${m[1]})` } } : {};
}

const NEIGH_STATES = ['REACHABLE', 'STALE', 'DELAY', 'PROBE', 'FAILED', 'INCOMPLETE', 'PERMANENT', 'NOARP', 'NONE'];

/** `172.16.34.2 dev ib0 lladdr 02:00:00:00:22:01 REACHABLE` (a router, an `extern_learn` flag in between). */
export function parseNeighbour(line: string): NeighbourEntry | undefined {
  const m = new RegExp(
    `^(${IP}) dev ([^\\s/]{1,15})(?: lladdr ([0-9a-fA-F]{2}(?::[0-9a-fA-F]{2}){5,19}))?(?: [a-z_]{1,20})* ([A-Z]{4,10})$`,
  ).exec(line.trimEnd());
  if (!m || !NEIGH_STATES.includes(m[4]!)) return undefined;
  return { address: m[1]!, dev: m[2]!, ...(m[3] ? { lladdr: m[3].toLowerCase() } : {}), state: m[4]! };
}

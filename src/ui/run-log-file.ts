/**
 * The run log on disk. Every command that contacts hosts keeps one: by default a new file under
 * `$XDG_STATE_HOME/ibfleet/runs/` (`~/.local/state/ibfleet/runs/` without it), or the file `--log`
 * names. It is a handler of the run's events like any display, written as hosts finish, so a run
 * cut short still leaves what it saw.
 *
 * Bounds: a log stops growing at MAX_LOG_BYTES (the end line is still written), and the default
 * directory keeps the KEEP_LOGS newest logs — older ones are removed when a new run starts. Secrets
 * (the -K sudo password) are taken out of every line before it is written, whatever printed them.
 */
import { closeSync, mkdirSync, readdirSync, unlinkSync, writeSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import {
  runLogCellLine,
  runLogMatrixHead,
  runLogMatrixSummary,
  runLogEnd,
  runLogHeader,
  runLogHostBlock,
  type HostTranscript,
  type TranscriptEntry,
} from './text/run-log.js';
import type { HostRef, MatrixCell, RunEnd, RunEvents, RunStart, Stage } from '../vocabulary.js';
import { openOwnFile } from '../runner/own-file.js';

/** A log past this stops taking host blocks and cells: a 254-host matrix is ~260 000 cells. */
export const MAX_LOG_BYTES = 8 * 1024 * 1024;
/** How many logs the default directory keeps. */
export const KEEP_LOGS = 50;
/** One transcript entry (a script, its output) is cut at this size in the log. */
export const MAX_ENTRY_BYTES = 256 * 1024;
/**
 * An entry this long that a host's block above already holds (the same label, the same text: the
 * routing program a deploy writes on every host) is not written again; the block refers to that
 * host's. One that differs from such an entry only in some of its lines (at most one in
 * SHARED_LINES_APART: a change script's host id, addresses and run id, ~10 of ~480 lines) is
 * written as those lines. Shorter ones, a host's own data, are written in full.
 */
export const SHARED_ENTRY_CHARS = 1024;
export const SHARED_LINES_APART = 4;
/** How many entries written in full under one label a later one is compared with (a fleet of several kinds). */
const SHARED_REFERENCES = 8;
const REDACTED = '[secret removed]';

export interface RunLogOptions {
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly cwd: string;
  /** --log FILE; false: --no-log; undefined: a new file in the default directory. */
  readonly file: string | false | undefined;
  readonly command: string;
  /** Values never to be written (the sudo password), asked for at each write. */
  readonly secrets: () => readonly string[];
  readonly now?: () => Date;
}

export interface RunLog {
  readonly path: string;
  readonly events: RunEvents;
  /** Closes the file; the events write nothing after. Idempotent. */
  close(): void;
}

/** `$XDG_STATE_HOME/ibfleet/runs`, else `~/.local/state/ibfleet/runs` (XDG Base Directory spec: relative XDG paths are ignored). */
export function defaultLogDir(env: Readonly<Record<string, string | undefined>>): string {
  const xdg = env.XDG_STATE_HOME;
  const base = xdg && xdg.startsWith('/') ? xdg : join(env.HOME || homedir(), '.local', 'state');
  return join(base, 'ibfleet', 'runs');
}

/** Removes the oldest `*.log` files of `dir` beyond `keep`, by name (names start with the time). */
export function pruneLogs(dir: string, keep: number): void {
  let names: string[];
  try {
    names = readdirSync(dir)
      .filter((n) => n.endsWith('.log'))
      .sort();
  } catch {
    return;
  }
  for (const name of names.slice(0, Math.max(0, names.length - keep))) {
    try {
      unlinkSync(join(dir, name));
    } catch {
      // another run removed it first
    }
  }
}

function fileName(command: string, when: Date): string {
  const stamp = when
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');
  return `${stamp}-${command.replace(/[^a-z-]/g, '')}-${process.pid}.log`;
}

/**
 * Opens the run's log, or returns undefined with --no-log. A log that cannot be written is not a
 * reason to stop the run: the caller says so and goes on without one. A name that is not a plain
 * file of ours (a symbolic or hard link, another user's file: own-file.ts) is refused with a
 * UsageError, which does stop it.
 */
export function openRunLog(options: RunLogOptions): RunLog | undefined {
  if (options.file === false) return undefined;
  const now = options.now ?? (() => new Date());
  const path = logPath(options, options.file, now);
  const fd = openOwnFile(path, options.file === undefined ? 'run log' : `--log ${options.file}`);
  const events = logEvents(boundedWriter(fd, options.secrets), now);
  let closed = false;
  // A phase of a longer command (onboard's deploy, then verify) is a run of its own: every event
  // is written in order, and the file closes once, at the end.
  const guarded = Object.fromEntries(
    Object.entries(events).map(([name, handler]) => [
      name,
      (...args: unknown[]) => (closed ? undefined : (handler as (...a: unknown[]) => void)(...args)),
    ]),
  ) as RunEvents;
  return {
    path,
    events: guarded,
    close: () => {
      if (closed) return;
      closed = true;
      closeSync(fd);
    },
  };
}

/** --log's file, else a new one in the default directory (made if missing, its oldest logs pruned). */
function logPath(options: RunLogOptions, file: string | undefined, now: () => Date): string {
  if (file !== undefined) return resolve(options.cwd, file);
  const dir = defaultLogDir(options.env);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  pruneLogs(dir, KEEP_LOGS - 1);
  return join(dir, fileName(options.command, now()));
}

/** Writes lines with every secret taken out; past MAX_LOG_BYTES only what is written `always`. */
interface LogWrite {
  (lines: readonly string[], always?: boolean): void;
  /** Past MAX_LOG_BYTES: a host block would not be written, so it need not be made (~80 KB a host of a deploy). */
  readonly full: () => boolean;
}

function boundedWriter(fd: number, secrets: () => readonly string[]): LogWrite {
  let written = 0;
  let full = false;
  const redact = (text: string) =>
    secrets().reduce((t, secret) => (secret === '' ? t : t.split(secret).join(REDACTED)), text);
  const write = (lines: readonly string[], always = false) => {
    if (full && !always) return;
    // One join with the closing line break (`${join}\n` would be a second copy of ~80 KB a host).
    const text = redact([...lines, ''].join('\n'));
    // UTF-8 takes at most 3 bytes for a UTF-16 unit: a block that fits even so is written without
    // counting its bytes first; one that may not is encoded once, counted and written.
    if (always || written + text.length * 3 <= MAX_LOG_BYTES) {
      written += writeSync(fd, text);
      return;
    }
    const bytes = Buffer.from(text);
    if (written + bytes.length > MAX_LOG_BYTES) {
      full = true;
      writeSync(
        fd,
        `# the log stops here: it reached ${MAX_LOG_BYTES / (1024 * 1024)} MiB (--json has every host and cell)\n`,
      );
      return;
    }
    written += writeSync(fd, bytes);
  };
  return Object.assign(write, { full: () => full });
}

/**
 * Marks each long entry of a host's block that an earlier block holds (SHARED_ENTRY_CHARS), or
 * holds but for some of its lines (SHARED_LINES_APART: those lines, against the entry written in
 * full under its label that differs least), remembering the others for the blocks after. Asked as
 * each block is written, so an entry refers only to a block above it; once the log is full no
 * block is written, and none refers to one.
 */
function sharedEntries() {
  interface Whole {
    readonly text: string;
    readonly host: number;
    lines?: readonly string[];
  }
  /** By label, the entries written in full, newest first. */
  const written = new Map<string, Whole[]>();
  const linesOf = (text: string) => (text.endsWith('\n') ? text.slice(0, -1) : text).split('\n');
  return (host: number, entries: HostTranscript['entries']): HostTranscript['entries'] =>
    entries.map((entry): TranscriptEntry => {
      if (entry.text.length < SHARED_ENTRY_CHARS) return entry;
      const wholes = written.get(entry.label) ?? [];
      const same = wholes.find((w) => w.text === entry.text);
      if (same) return { ...entry, sameAs: same.host };
      const lines = linesOf(entry.text);
      let best: { host: number; lines: { n: number; text: string }[] } | undefined;
      for (const w of wholes) {
        const theirs = (w.lines ??= linesOf(w.text));
        if (theirs.length !== lines.length) continue;
        const apart: { n: number; text: string }[] = [];
        const most = Math.min(lines.length / SHARED_LINES_APART, best ? best.lines.length - 1 : Infinity);
        for (let i = 0; i < lines.length && apart.length <= most; i++)
          if (lines[i] !== theirs[i]) apart.push({ n: i + 1, text: lines[i]! });
        if (apart.length > 0 && apart.length <= most) best = { host: w.host, lines: apart };
      }
      if (best) return { ...entry, sameAs: best.host, except: { total: lines.length, lines: best.lines } };
      written.set(entry.label, [{ text: entry.text, host }, ...wholes].slice(0, SHARED_REFERENCES));
      return entry;
    });
}

/** The log as a handler of the run's events: a host's transcript is kept until it finishes, then written whole. */
function logEvents(write: LogWrite, now: () => Date): RunEvents {
  let start: RunStart | undefined;
  const transcripts = new Map<
    number,
    { stages: { stage: Stage; at: number }[]; entries: { label: string; text: string }[] }
  >();
  const of = (host: HostRef) => {
    let t = transcripts.get(host.id);
    if (!t) transcripts.set(host.id, (t = { stages: [], entries: [] }));
    return t;
  };
  const cells: MatrixCell[] = [];
  const shared = sharedEntries();
  return {
    onRunStart: (event) => {
      start ??= event;
      write(runLogHeader(event, now()));
    },
    onHostStart: (host, at) => void of(host).stages.push({ stage: 'connect', at }),
    onStage: (host, stage, at) => {
      const stages = of(host).stages;
      if (stages.at(-1)?.stage !== stage) stages.push({ stage, at });
    },
    onOutput: (host, label, text) => {
      if (write.full()) return;
      // Counted in bytes only when it may be over (at most 3 UTF-8 bytes a UTF-16 unit).
      const cut =
        text.length * 3 > MAX_ENTRY_BYTES && Buffer.byteLength(text) > MAX_ENTRY_BYTES
          ? `${text.slice(0, MAX_ENTRY_BYTES)}\n[… cut at ${MAX_ENTRY_BYTES / 1024} KiB]`
          : text;
      of(host).entries.push({ label, text: cut });
    },
    onHostDone: (result) => {
      const transcript: HostTranscript | undefined = transcripts.get(result.host.id);
      transcripts.delete(result.host.id);
      if (write.full()) return;
      const shown = transcript && { ...transcript, entries: shared(result.host.id, transcript.entries) };
      write(runLogHostBlock(result, shown, transcript?.stages[0]?.at));
    },
    onCell: (cell) => void cells.push(cell),
    onRunEnd: (end: RunEnd) => {
      const all = end.cells.length > 0 ? end.cells : cells.splice(0);
      if (all.length > 0)
        write([
          '== matrix',
          ...runLogMatrixHead(end.matrix),
          ...all.map(runLogCellLine),
          ...runLogMatrixSummary(all, start?.inventory),
          '',
        ]);
      write(runLogEnd(end, all), true);
    },
  };
}

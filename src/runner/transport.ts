/**
 * The transport seam: the runner talks to hosts only through these interfaces. Production uses
 * the ssh2 transport (ssh-transport.ts); unit tests pass a table-driven fake that runs the same
 * channel logic over a fake shell (test/helpers/fake-transport.ts).
 */
import { HostError, tail } from '../errors.js';
import { largestProbePart } from '../facts/probe-format.js';
import { printable } from '../host-text.js';
import { AFTER_MARK, SELF_RESTORED_LINE, SELF_RESTORING_LINE } from '../render/apply-script.js';
import type { Host } from '../inventory/model.js';
import type { Stage } from '../vocabulary.js';

export interface ExecResult {
  readonly code: number | null;
  readonly signal: string | undefined;
  /** What was kept of each stream: all of it, or its last OUTPUT_KEEP characters when `cut`. */
  readonly stdout: string;
  readonly stderr: string;
  /** The host printed more than OUTPUT_KEEP on a stream: reading stopped there and the channel was closed. */
  readonly cut?: OutputCut;
}

/**
 * At most this much of each stream of a channel is kept (its tail): every answer ibfleet reads —
 * the probe, a change's log and closing probe, verify's cells — is far smaller, and a host that
 * prints more (a login that prints megabytes) cannot make the controller hold it.
 */
export const OUTPUT_KEEP = 1024 * 1024;

export interface OutputCut {
  readonly stream: 'stdout' | 'stderr';
  /** In a conversation: the cut came after the continuation was sent (the change had started). */
  readonly afterTurn: boolean;
  /** The stream's first characters (the tail kept is the rest of what is known of it). */
  readonly head?: string;
  /** Where the kept tail starts, in characters of the stream. */
  readonly tailStart?: number;
}

export interface ExecOptions {
  /** Aborting closes the channel; the remote script is written to finish what it started. */
  readonly signal?: AbortSignal;
  /** Called with each complete stdout line as it arrives (verify streams cells this way). */
  readonly onLine?: (line: string) => void;
}

/** What to run next in the same shell, once the first script has printed its last line. */
export interface Continuation {
  readonly script: string;
  /** For the rest of the conversation: its abort signal and line handler replace the first script's. */
  readonly options?: ExecOptions;
}

/** The end of a conversation: `stdout` is the output after the first script's, the exit status the shell's. */
export interface Conversation extends ExecResult {
  /** The first script's output through its `until` line; undefined when that line never came. */
  readonly first: string | undefined;
}

/** One SSH connection to one host; scripts run as root (directly or through sudo). */
export interface Session {
  run(script: string, options?: ExecOptions): Promise<ExecResult>;
  /**
   * Runs `script` in a shell that keeps reading: when the output has printed the line `until`,
   * `next` gets that output and returns what the same shell runs next (undefined: nothing more),
   * at once or later (the shell waits for its input meanwhile).
   * One channel where `run` twice takes two — each channel is a session sshd forks and a login
   * shell it starts, per host.
   */
  converse(
    script: string,
    until: string,
    next: (firstOutput: string) => Continuation | undefined | Promise<Continuation | undefined>,
    options?: ExecOptions,
  ): Promise<Conversation>;
  close(): void;
  /** Channels opened so far on this connection. */
  readonly channels: number;
  /** What the host key check concluded, for messages ("recorded new key" with --accept-new). */
  readonly notes: readonly string[];
}

export interface Transport {
  connect(host: Host, signal: AbortSignal): Promise<Session>;
}

/**
 * Connecting failed. `unreachable` (refused, timed out, no route, unknown name) is reported as the
 * host status `unreachable`; authentication and host-key problems are `failed`.
 */
export class ConnectError extends HostError {
  readonly unreachable: boolean;
  constructor(message: string, unreachable: boolean) {
    super('connect', message);
    this.name = 'ConnectError';
    this.unreachable = unreachable;
  }
}

/** A failure in ibfleet's own words (`ibfleet: telling netplan … failed (exit 1): …`), not its restore's. */
const OWN_FAILURE = /^ibfleet: .*\bfailed\b/;
const RESTORE_LINES: readonly string[] = [SELF_RESTORING_LINE, SELF_RESTORED_LINE];

const nonEmptyLines = (text: string) =>
  text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');

/**
 * The line of a failed script's output that says why: the first in which ibfleet says what failed
 * (a tool's own words it passed on); else, when the change put the host back itself, the last
 * line before it began to (the routing script's reason); else the last line printed. Never the
 * closing probe's lines, nor what the restore printed (netplan's warning that a file's permissions
 * are too open, networkctl's "Failed to send reload request").
 */
function failureLine(result: ExecResult): string | undefined {
  const afterMark = result.stdout.indexOf(`\n${AFTER_MARK}\n`);
  const stdout = nonEmptyLines(afterMark >= 0 ? result.stdout.slice(0, afterMark) : result.stdout);
  const restoring = stdout.indexOf(SELF_RESTORING_LINE);
  const change = restoring >= 0 ? stdout.slice(0, restoring) : stdout;
  const stderr = nonEmptyLines(result.stderr);
  const own = [...stderr, ...change].find((l) => OWN_FAILURE.test(l) && !RESTORE_LINES.includes(l));
  if (own) return own;
  if (restoring >= 0 && change.length) return change.at(-1);
  return [...change, ...stderr].at(-1);
}

/** A script ran and exited non-zero: the message quotes the line that says why (failureLine). */
export function scriptFailed(stage: Stage, what: string, result: ExecResult): HostError {
  const exit = result.code === null ? `killed by ${result.signal ?? 'a signal'}` : `exit ${result.code}`;
  const output = `${result.stdout}\n${result.stderr}`.trim();
  const lastLine = failureLine(result) ?? '';
  return new HostError(stage, `${what} failed (${exit})${lastLine ? `: ${lastLine.trim()}` : ''}`, {
    ...(result.code === null ? {} : { exitCode: result.code }),
    stderrTail: output.split('\n').slice(-8).join('\n'),
  });
}

/** A size for a person: `1.0 MiB`, `640 KiB`, `512 bytes`. */
function sizeText(characters: number): string {
  if (characters >= 1024 * 1024) return `${(characters / (1024 * 1024)).toFixed(1)} MiB`;
  return characters >= 1024 ? `${Math.floor(characters / 1024)} KiB` : `${characters} bytes`;
}

/**
 * A result whose output was cut is not read at all: with part of what the host said gone, a probe
 * could miss a rule and a change's closing probe could pass for one it did not print. The host
 * fails with what happened and what to look at.
 */
export function requireWhole<T extends ExecResult>(stage: Stage, during: string, result: T, note?: string): T {
  if (!result.cut) return result;
  const mib = OUTPUT_KEEP / (1024 * 1024);
  const { stream, head, tailStart } = result.cut;
  // A probe's output names its parts: the one that was large is named, not a guess at the cause.
  const large =
    stream === 'stdout' && head !== undefined && tailStart !== undefined
      ? largestProbePart(head, result.stdout, tailStart)
      : undefined;
  const why = large
    ? `most of it was ${printable(large.what).slice(0, 200)}, ${sizeText(large.size)} of it before ibfleet stopped reading`
    : 'does a start-up file of the SSH user, such as ~/.bashrc, print?';
  throw new HostError(
    stage,
    `the host printed more than ${mib} MiB on ${stream} during ${during}, more than ibfleet reads from one command; it stopped reading there, as output cut short cannot be trusted (${why})${note ? `; ${note}` : ''}`,
    { stderrTail: tail(result.stderr, 3) },
  );
}

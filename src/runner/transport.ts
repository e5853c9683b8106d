/**
 * The transport seam: the runner talks to hosts only through these interfaces. Production uses
 * the ssh2 transport (ssh-transport.ts); unit tests pass a table-driven fake that runs the same
 * channel logic over a fake shell (test/helpers/fake-transport.ts).
 */
import { HostError, tail } from '../errors.js';
import { largestProbePart } from '../facts/probe-format.js';
import { printable } from '../host-text.js';
import { SELF_RESTORED_LINE, SELF_RESTORING_LINE } from '../render/apply-script.js';
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

/**
 * A script ran and exited non-zero. The message quotes the first line in which ibfleet says what
 * failed (the tool's own words it passed on); failing that, the last line printed. Not the last
 * line first: after a change that failed puts the host back, that is the restore's noise (netplan
 * warning that a file's permissions are too open), not why it failed.
 */
export function scriptFailed(stage: Stage, what: string, result: ExecResult): HostError {
  const exit = result.code === null ? `killed by ${result.signal ?? 'a signal'}` : `exit ${result.code}`;
  const output = `${result.stdout}\n${result.stderr}`.trim();
  const lines = `${result.stderr}\n${result.stdout}`
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
  const own = lines.find((l) => OWN_FAILURE.test(l) && !RESTORE_LINES.includes(l));
  const lastLine =
    own ??
    output
      .split('\n')
      .filter((l) => l.trim() !== '')
      .pop() ??
    '';
  return new HostError(stage, `${what} failed (${exit})${lastLine ? `: ${lastLine.trim()}` : ''}`, {
    ...(result.code === null ? {} : { exitCode: result.code }),
    stderrTail: output.split('\n').slice(-8).join('\n'),
  });
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
    ? `most of it was ${printable(large).slice(0, 200)}`
    : 'does a start-up file of the SSH user, such as ~/.bashrc, print?';
  throw new HostError(
    stage,
    `the host printed more than ${mib} MiB on ${stream} during ${during}, more than ibfleet reads from one command; it stopped reading there, as output cut short cannot be trusted (${why})${note ? `; ${note}` : ''}`,
    { stderrTail: tail(result.stderr, 3) },
  );
}

/**
 * One channel's life, from the script sent to the result: sudo's prompt and readiness (sudo-
 * handshake.ts), output kept within bounds, the -K password taken out of everything the host
 * prints (redact.ts), a conversation's turn, and a host that stops answering. collect() drives it
 * over the few channel events it needs (ShellChannel), so a fake channel can drive it in tests.
 */
import { StringDecoder } from 'node:string_decoder';
import { redactText, SecretFilter } from './redact.js';
import type { SudoHandshake } from './sudo-handshake.js';
import {
  ConnectError,
  OUTPUT_KEEP,
  type Continuation,
  type Conversation,
  type ExecOptions,
  type OutputCut,
} from './transport.js';

/**
 * A channel or connection asked to close that has not closed within this long belongs to a host
 * that is gone (link down, sshd stopped): its socket is destroyed rather than left to ssh2's
 * keepalive (3 × 15 s), so a lost host never holds the process past its outcome.
 */
export const CLOSE_GRACE_MS = 2_000;

export interface ConversationPlan {
  readonly until: string;
  /** What the shell runs next; it may take its time deciding (the shell waits on its input). */
  readonly next: (firstOutput: string) => Continuation | undefined | Promise<Continuation | undefined>;
}

/** The part of an ssh2 channel collect() uses: events for output and the end, and its input side. */
export interface ShellChannel {
  on(event: 'data', listener: (chunk: Buffer) => void): unknown;
  on(event: 'exit', listener: (code: number | null, signal?: string) => void): unknown;
  on(event: 'close', listener: () => void): unknown;
  readonly stderr: { on(event: 'data', listener: (chunk: Buffer) => void): unknown };
  write(data: string): unknown;
  end(data?: string): unknown;
  close(): unknown;
}

export interface CollectInput {
  readonly script: string;
  /** The channel runs sudo: send the nonce, answer its prompt once, send the script when its shell is ready. */
  readonly sudo: SudoHandshake | undefined;
  readonly sudoPassword: () => Promise<string | undefined>;
  /** Taken out of all the host prints before it goes anywhere (the -K password); none when absent. */
  readonly secrets?: () => readonly string[];
  /** `user@host`, for messages. */
  readonly who: string;
  readonly options: ExecOptions;
  readonly conversation: ConversationPlan | undefined;
  /** The channel did not close within CLOSE_GRACE_MS of being asked to: the host is gone. */
  readonly onUnanswered?: () => void;
}

/** How much of a stream's start is kept beside its tail (the probe's first sections fit in it). */
const HEAD_KEEP = 64 * 1024;

/**
 * What is kept of one stream of one channel: its last OUTPUT_KEEP characters. Anything beyond is
 * counted, not kept, so N channels at once hold at most N × 2 × OUTPUT_KEEP whatever hosts print.
 */
class KeptOutput {
  text = '';
  /** The first HEAD_KEEP characters: what was cut names the part it was in (a probe's section mark). */
  head = '';
  /** Characters received in all. */
  received = 0;
  push(chunk: string): void {
    this.received += chunk.length;
    if (this.head.length < HEAD_KEEP) this.head += chunk.slice(0, HEAD_KEEP - this.head.length);
    this.text += chunk;
    if (this.text.length > OUTPUT_KEEP) this.text = this.text.slice(this.text.length - OUTPUT_KEEP);
  }
  get overflowed(): boolean {
    return this.received > OUTPUT_KEEP;
  }
  /** Starts again with `rest` (what followed a marker line). */
  reset(rest: string): void {
    this.text = '';
    this.head = '';
    this.received = 0;
    this.push(rest);
  }
}

/**
 * One channel's life: through sudo first when asked (the nonce line, the one answer to its
 * prompt, the ready line), then send the script, gather stdout and stderr (their tails, see
 * KeptOutput), hand complete lines to onLine, and in a conversation send what comes next once the
 * first script's `until` line is out. The secrets (the -K password) are taken out of every text
 * that leaves: stdout as it streams (SecretFilter: a password split across chunks is held back
 * until it is whole), stderr when the channel closes — it is only searched for sudo's prompt
 * before — and so the result, its `first` output and every error built from them. The handshake's
 * own lines are searched for in the raw text, so a password that happens to be a word of them
 * (`sudo`) cannot hide them. A host that prints more than OUTPUT_KEEP on a stream is no
 * longer read: its output cannot be read whole, so nothing it says can be trusted — the channel is
 * closed and the result says what was cut. Resolves when the channel closes.
 */
export function collect(channel: ShellChannel, input: CollectInput): Promise<Conversation> {
  return new Promise((resolve, reject) => new ChannelLife(channel, input, resolve, reject).start());
}

/** collect()'s state and steps: one instance per channel, settled once, when the channel closes. */
class ChannelLife {
  private readonly stdout = new KeptOutput();
  private readonly stderr = new KeptOutput();
  // UTF-8 decoded across chunk borders: a character split between two reads (a password's `ä`)
  // stays one character, so it can be recognised.
  private readonly decode = { stdout: new StringDecoder('utf8'), stderr: new StringDecoder('utf8') };
  private readonly stdoutFilter: SecretFilter;
  private readonly secrets: () => readonly string[];
  private options: ExecOptions;
  /** Output after the last complete line, for onLine. */
  private pending = '';
  private code: number | null = null;
  private signal: string | undefined;
  private ready: boolean;
  private prompts = 0;
  /** Where the last answered prompt ended, in stderr characters received. */
  private answered = 0;
  private failure: Error | undefined;
  private cut: OutputCut | undefined;
  private closing: NodeJS.Timeout | undefined;
  private closed = false;
  /** Where in stdout the search for a marker line goes on (what came before cannot hold it). */
  private scanFrom = 0;
  /** The first script's output, once its `until` line has come (conversations only). */
  private first: string | undefined;

  constructor(
    private readonly channel: ShellChannel,
    private readonly input: CollectInput,
    private readonly resolve: (result: Conversation) => void,
    private readonly reject: (error: Error) => void,
  ) {
    this.secrets = input.secrets ?? (() => []);
    this.stdoutFilter = new SecretFilter(this.secrets);
    this.options = input.options;
    this.ready = input.sudo === undefined;
  }

  start(): void {
    this.options.signal?.addEventListener('abort', this.onAbort, { once: true });
    if (this.input.sudo) this.channel.write(this.input.sudo.firstInput);
    else this.send();
    this.channel.on('data', (chunk: Buffer) => this.onStdout(chunk));
    this.channel.stderr.on('data', (chunk: Buffer) => this.onStderr(chunk));
    this.channel.on('exit', (exitCode: number | null, signalName?: string) => {
      this.code = exitCode;
      this.signal = signalName ?? undefined;
    });
    this.channel.on('close', () => this.onClose());
  }

  private readonly close = () => {
    this.channel.close();
    this.closing ??= setTimeout(() => this.input.onUnanswered?.(), CLOSE_GRACE_MS);
  };
  private readonly onAbort = () => this.close();

  /** The script; in a conversation the shell's stdin stays open for what comes next. */
  private send(): void {
    if (this.input.conversation) this.channel.write(this.input.script);
    else this.channel.end(this.input.script);
  }

  private emitLines(text: string): void {
    if (!this.options.onLine) return;
    this.pending += text;
    let index: number;
    while ((index = this.pending.indexOf('\n')) >= 0) {
      this.options.onLine(this.pending.slice(0, index));
      this.pending = this.pending.slice(index + 1);
    }
  }

  /** The first index of `line` (a whole line) in stdout at or after scanFrom, or -1. */
  private findLine(line: string, wholeLine: boolean): number {
    const text = this.stdout.text;
    let at = text.indexOf(line, this.scanFrom);
    while (at >= 0 && wholeLine && at > 0 && text[at - 1] !== '\n') at = text.indexOf(line, at + 1);
    this.scanFrom = Math.max(0, text.length - line.length);
    return at;
  }

  /** The first script has finished speaking: ask what comes next and send it, or end the shell's input. */
  private turn(end: number): void {
    this.first = this.stdout.text.slice(0, end);
    this.stdout.reset(this.stdout.text.slice(end));
    let decided: Continuation | undefined | Promise<Continuation | undefined>;
    try {
      decided = this.input.conversation!.next(this.first);
    } catch (error) {
      return this.fail(error as Error);
    }
    if (decided instanceof Promise)
      decided.then(
        (c) => this.proceed(c),
        (error: Error) => this.fail(error),
      );
    else this.proceed(decided);
  }

  private proceed(continuation: Continuation | undefined): void {
    // Closed while the decision was being made (interrupted, connection lost): nothing more to send.
    if (this.closed) return;
    if (!continuation) return void this.channel.end();
    this.options.signal?.removeEventListener('abort', this.onAbort);
    this.options = continuation.options ?? {};
    this.pending = '';
    if (this.options.signal?.aborted) return this.close();
    this.options.signal?.addEventListener('abort', this.onAbort, { once: true });
    this.channel.end(continuation.script);
  }

  private fail(error: Error): void {
    this.failure = error;
    this.close();
  }

  private overflowed(stream: 'stdout' | 'stderr', kept: KeptOutput): boolean {
    if (!kept.overflowed) return false;
    if (!this.cut) {
      const shown = redactText(kept.head, this.secrets());
      this.cut = {
        stream,
        afterTurn: this.first !== undefined,
        head: shown,
        tailStart: kept.received - kept.text.length,
      };
      this.close();
    }
    return true;
  }

  private onStdout(chunk: Buffer): void {
    if (this.cut) return;
    let text = this.decode.stdout.write(chunk);
    if (!this.ready) {
      // The login's and sudo's output, raw: searched for the ready line, never passed on.
      const readyLine = this.input.sudo!.readyLine;
      this.stdout.push(text);
      if (this.overflowed('stdout', this.stdout)) return;
      const at = this.findLine(readyLine, false);
      if (at < 0) return;
      text = this.stdout.text.slice(at + readyLine.length);
      this.stdout.reset('');
      this.scanFrom = 0;
      this.ready = true;
      this.send();
    }
    this.passOn(this.stdoutFilter.push(text));
  }

  /** Script output, secrets taken out: kept, handed on line by line, searched for the `until` line. */
  private passOn(text: string): void {
    this.stdout.push(text);
    if (this.overflowed('stdout', this.stdout)) return;
    this.emitLines(text);
    const conversation = this.input.conversation;
    if (conversation && this.first === undefined) {
      const marker = `${conversation.until}\n`;
      const at = this.findLine(marker, true);
      if (at >= 0) this.turn(at + marker.length);
    }
  }

  private onStderr(chunk: Buffer): void {
    if (this.cut) return;
    this.stderr.push(this.decode.stderr.write(chunk));
    if (
      this.overflowed('stderr', this.stderr) ||
      this.ready ||
      !this.stderr.text.endsWith(this.input.sudo!.prompt) ||
      this.stderr.received <= this.answered
    )
      return;
    // sudo's prompt, the last thing on stderr: it now waits for the password. A second one
    // ("Sorry, try again.") means the password was wrong.
    this.answered = this.stderr.received;
    this.prompts++;
    const who = this.input.who;
    if (this.prompts > 1) return this.fail(new ConnectError(`sudo on ${who} rejected the password`, false));
    void this.input.sudoPassword().then((password) => {
      if (password !== undefined) return void this.channel.write(`${password}\n`);
      this.fail(
        new ConnectError(
          `sudo on ${who} asks for a password; run again with -K/--ask-sudo-pass (or allow NOPASSWD for ibfleet's commands)`,
          false,
        ),
      );
    });
  }

  private onClose(): void {
    this.closed = true;
    clearTimeout(this.closing);
    this.options.signal?.removeEventListener('abort', this.onAbort);
    // What was held back (the start of a secret that never came whole) and a last partial character.
    const rest = this.ready ? this.stdoutFilter.push(this.decode.stdout.end()) + this.stdoutFilter.end() : '';
    this.stdout.push(rest);
    this.emitLines(rest);
    if (this.pending && this.options.onLine) this.options.onLine(this.pending);
    this.stderr.push(this.decode.stderr.end());
    const shown = (text: string) => redactText(text, this.secrets());
    const sudo = this.input.sudo;
    const errText = shown(sudo ? this.stderr.text.split(sudo.prompt).join('') : this.stderr.text);
    if (this.failure) return this.reject(this.failure);
    if (!this.ready && !this.cut) {
      return this.reject(
        new ConnectError(
          `sudo on ${this.input.who} did not start a shell: ${errText.trim().split('\n').pop() || 'no output'}`,
          false,
        ),
      );
    }
    const stdout = this.ready ? this.stdout.text : shown(this.stdout.text);
    this.resolve({
      code: this.code,
      signal: this.signal,
      stdout,
      stderr: errText,
      first: this.first,
      ...(this.cut ? { cut: this.cut } : {}),
    });
  }
}

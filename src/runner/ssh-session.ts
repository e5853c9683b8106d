/**
 * One SSH connection as a Session: each script runs in its own channel as `sh -s` (through sudo
 * when the user is not root), at most MAX_CHANNELS_PER_CONNECTION at once, and a conversation
 * lets one shell run a second script once the first has spoken. The channel's life — sudo's
 * marker and prompt, output, the turn — is collect(), which a fake channel can drive in tests.
 */
import pLimit from 'p-limit';
import type { Client } from 'ssh2';
import { shellQuote } from '../render/shell.js';
import { ConnectError, type Continuation, type Conversation, type ExecOptions, type ExecResult, type Session } from './transport.js';

/** A marker line sudo's shell prints before reading the script, and a prompt no real tool uses. */
export const SUDO_PROMPT = '[ibfleet-sudo-password-7f3a]';
export const SUDO_READY = 'IBFLEET-SUDO-READY-7f3a';

/** sshd's default MaxSessions is 10; stay under it whatever the callers ask for at once. */
const MAX_CHANNELS_PER_CONNECTION = 8;

export class SshSession implements Session {
  channels = 0;
  private readonly limit = pLimit(MAX_CHANNELS_PER_CONNECTION);
  constructor(
    private readonly client: Client,
    private readonly chain: readonly Client[],
    private readonly sudo: boolean,
    private readonly sudoPassword: () => Promise<string | undefined>,
    readonly notes: readonly string[],
    private readonly who: string,
  ) {}

  close(): void {
    for (const c of [...this.chain].reverse()) c.end();
  }

  run(script: string, options: ExecOptions = {}): Promise<ExecResult> {
    // `sh -s` reads the script from stdin, so no login shell ever parses it (csh, fish) and no
    // inventory value travels on a command line. With sudo, the shell prints a marker first: the
    // password is sent only if sudo actually prompts, and the script only after the marker.
    return this.limit(() => this.open(script, options, undefined).then(({ first: _first, ...result }) => result));
  }

  converse(script: string, until: string, next: ConversationPlan['next'], options: ExecOptions = {}): Promise<Conversation> {
    return this.limit(() => this.open(script, options, { until, next }));
  }

  private open(script: string, options: ExecOptions, conversation: ConversationPlan | undefined): Promise<Conversation> {
    const command = this.sudo ? `sudo -S -p ${shellQuote(SUDO_PROMPT)} sh -c ${shellQuote(`echo ${SUDO_READY}; exec sh -s`)}` : 'sh -s';
    return new Promise<Conversation>((resolve, reject) => {
      this.client.exec(command, (error, channel) => {
        if (error) return reject(new ConnectError(`${this.who}: cannot open a session channel: ${error.message}`, false));
        this.channels++;
        collect(channel, { script, sudo: this.sudo, sudoPassword: this.sudoPassword, who: this.who, options, conversation }).then(resolve, reject);
      });
    });
  }
}

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
  /** The channel runs sudo: wait for SUDO_READY, answer SUDO_PROMPT with the password. */
  readonly sudo: boolean;
  readonly sudoPassword: () => Promise<string | undefined>;
  /** `user@host`, for messages. */
  readonly who: string;
  readonly options: ExecOptions;
  readonly conversation: ConversationPlan | undefined;
}

/**
 * One channel's life: send the script (after sudo's marker, answering its prompt at most once),
 * gather stdout and stderr, hand complete lines to onLine, and in a conversation send what comes
 * next once the first script's `until` line is out. Resolves when the channel closes.
 */
export function collect(channel: ShellChannel, input: CollectInput): Promise<Conversation> {
  const { script, sudo, sudoPassword, who, conversation } = input;
  return new Promise((resolve, reject) => {
    let stdout = '';
    let stderr = '';
    let pending = '';
    let code: number | null = null;
    let signal: string | undefined;
    let ready = !sudo;
    let prompts = 0;
    let failure: Error | undefined;
    let options = input.options;
    /** The first script's output, once its `until` line has come (conversations only). */
    let first: string | undefined;

    const onAbort = () => channel.close();
    options.signal?.addEventListener('abort', onAbort, { once: true });
    // In a conversation the shell's stdin stays open for what comes next.
    const send = () => (conversation ? channel.write(script) : channel.end(script));
    if (!sudo) send();

    const emitLines = (text: string) => {
      if (!options.onLine) return;
      pending += text;
      let index: number;
      while ((index = pending.indexOf('\n')) >= 0) {
        options.onLine(pending.slice(0, index));
        pending = pending.slice(index + 1);
      }
    };

    let closed = false;
    /** The first script has finished speaking: ask what comes next and send it, or end the shell's input. */
    const turn = (at: number) => {
      first = stdout.slice(0, at);
      stdout = stdout.slice(at);
      let decided: Continuation | undefined | Promise<Continuation | undefined>;
      try {
        decided = conversation!.next(first);
      } catch (error) {
        failure = error as Error;
        channel.close();
        return;
      }
      if (decided instanceof Promise) {
        decided.then(proceed, (error: Error) => {
          failure = error;
          channel.close();
        });
      } else proceed(decided);
    };
    const proceed = (continuation: Continuation | undefined) => {
      // Closed while the decision was being made (interrupted, connection lost): nothing more to send.
      if (closed) return;
      if (!continuation) return void channel.end();
      options.signal?.removeEventListener('abort', onAbort);
      options = continuation.options ?? {};
      pending = '';
      if (options.signal?.aborted) return void channel.close();
      options.signal?.addEventListener('abort', onAbort, { once: true });
      channel.end(continuation.script);
    };

    channel.on('data', (chunk: Buffer) => {
      let text = chunk.toString('utf8');
      if (!ready) {
        const at = (stdout + text).indexOf(`${SUDO_READY}\n`);
        if (at < 0) {
          stdout += text;
          return;
        }
        text = (stdout + text).slice(at + SUDO_READY.length + 1);
        stdout = '';
        ready = true;
        send();
      }
      stdout += text;
      emitLines(text);
      if (conversation && first === undefined) {
        const marker = `${conversation.until}\n`;
        const at = stdout.startsWith(marker) ? 0 : stdout.indexOf(`\n${marker}`);
        if (at >= 0) turn(at === 0 ? marker.length : at + 1 + marker.length);
      }
    });
    channel.stderr.on('data', (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      if (!ready && text.includes(SUDO_PROMPT)) {
        prompts++;
        if (prompts > 1) {
          failure = new ConnectError(`sudo on ${who} rejected the password`, false);
          channel.close();
          return;
        }
        void sudoPassword().then((password) => {
          if (password === undefined) {
            failure = new ConnectError(`sudo on ${who} asks for a password; run again with -K/--ask-sudo-pass (or allow NOPASSWD for ibfleet's commands)`, false);
            channel.close();
          } else channel.write(`${password}\n`);
        });
        stderr += text.split(SUDO_PROMPT).join('');
        return;
      }
      stderr += text;
    });
    channel.on('exit', (exitCode: number | null, signalName?: string) => {
      code = exitCode;
      signal = signalName ?? undefined;
    });
    channel.on('close', () => {
      closed = true;
      options.signal?.removeEventListener('abort', onAbort);
      if (pending && options.onLine) options.onLine(pending);
      if (failure) return reject(failure);
      if (!ready) {
        return reject(new ConnectError(`sudo on ${who} did not start a shell: ${stderr.trim().split('\n').pop() ?? 'no output'}`, false));
      }
      resolve({ code, signal, stdout, stderr, first });
    });
  });
}

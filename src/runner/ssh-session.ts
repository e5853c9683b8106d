/**
 * One SSH connection as a Session: each script runs in its own channel as `sh -s` (through sudo
 * when the user is not root, see sudo-handshake.ts), at most MAX_CHANNELS_PER_CONNECTION at once,
 * and a conversation lets one shell run a second script once the first has spoken. The channel's
 * life — sudo's prompt and readiness, bounded output, the -K password taken out of everything the
 * host prints (redact.ts), the turn, a host that stops answering — is collect() in ssh-channel.ts,
 * which a fake channel can drive in tests.
 */
import pLimit from 'p-limit';
import type { Client } from 'ssh2';
import { CLOSE_GRACE_MS, collect, type ConversationPlan } from './ssh-channel.js';
import { redactText } from './redact.js';
import { newSudoHandshake, SUDO_COMMAND } from './sudo-handshake.js';
import { ConnectError, type Conversation, type ExecOptions, type ExecResult, type Session } from './transport.js';

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
    /** What no text from the host may carry on (the -K password, once asked for). */
    private readonly secrets: () => readonly string[] = () => [],
  ) {}

  /** Ends the connection; one still open CLOSE_GRACE_MS later (a host that is gone) is destroyed. */
  close(): void {
    for (const c of [...this.chain].reverse()) c.end();
    setTimeout(() => this.destroy(), CLOSE_GRACE_MS).unref();
  }

  /**
   * Drops the connection at once. ssh2's own destroy() does nothing once end() has half-closed the
   * socket — and an ended socket to a host that is gone waits for a FIN that never comes — so the
   * socket itself (ssh2 1.x keeps it as `_sock`) is destroyed.
   */
  private destroy(): void {
    for (const c of [...this.chain].reverse()) {
      c.destroy();
      (c as unknown as { _sock?: { destroy(): void } })._sock?.destroy();
    }
  }

  run(script: string, options: ExecOptions = {}): Promise<ExecResult> {
    // `sh -s` reads the script from stdin, so no login shell ever parses it (csh, fish) and no
    // inventory value travels on a command line.
    return this.limit(() => this.open(script, options, undefined).then(({ first: _first, ...result }) => result));
  }

  converse(
    script: string,
    until: string,
    next: ConversationPlan['next'],
    options: ExecOptions = {},
  ): Promise<Conversation> {
    return this.limit(() => this.open(script, options, { until, next }));
  }

  private open(
    script: string,
    options: ExecOptions,
    conversation: ConversationPlan | undefined,
  ): Promise<Conversation> {
    return new Promise<Conversation>((resolve, reject) => {
      const given = () => new ConnectError(`${this.who}: gave up before the host opened a session channel`, true);
      if (options.signal?.aborted) return reject(given());
      // Given up on while the host has not yet answered the channel request: a host that is gone
      // never will, and only destroying the socket ends the wait (a live one answers in time).
      let abandoned = false;
      let unanswered: NodeJS.Timeout | undefined;
      const onAbort = () => {
        abandoned = true;
        unanswered = setTimeout(() => this.destroy(), CLOSE_GRACE_MS);
        reject(given());
      };
      options.signal?.addEventListener('abort', onAbort, { once: true });
      this.client.exec(this.sudo ? SUDO_COMMAND : 'sh -s', (error, channel) => {
        options.signal?.removeEventListener('abort', onAbort);
        clearTimeout(unanswered);
        if (abandoned) return void channel?.close();
        if (error)
          return reject(
            new ConnectError(
              `${this.who}: cannot open a session channel: ${redactText(error.message, this.secrets())}`,
              false,
            ),
          );
        this.channels++;
        const sudo = this.sudo ? newSudoHandshake() : undefined;
        collect(channel, {
          script,
          sudo,
          sudoPassword: this.sudoPassword,
          secrets: this.secrets,
          who: this.who,
          options,
          conversation,
          onUnanswered: () => this.destroy(),
        }).then(resolve, reject);
      });
    });
  }
}

/**
 * A table-driven fake of the transport seam for unit tests of planning and error paths. Each host
 * answers what it is sent from a handler; its sessions are the real SshSession over a fake ssh2
 * client whose channels are fake shells, so a test takes the path production takes — a
 * conversation's turn at its `until` line, the channel's bounded output, a signal aborted before
 * a channel opens. The real ssh2 transport is covered end to end in the lab.
 */
import { EventEmitter } from 'node:events';
import { readFileSync } from 'node:fs';
import type { Fleet, Host } from '../../src/inventory/model.js';
import { sha256 } from '../../src/script/digest.js';
import type { Playbook } from '../../src/playbook/playbook.js';
import { AFTER_MARK } from '../../src/render/apply-script.js';
import { filesOf } from '../fixtures/fixtures.js';
import type { Client } from 'ssh2';
import type { ShellChannel } from '../../src/runner/ssh-channel.js';
import { SshSession } from '../../src/runner/ssh-session.js';
import type { ExecResult, Session, Transport } from '../../src/runner/transport.js';
import { ConnectError } from '../../src/runner/transport.js';
import type { Manager } from '../../src/inventory/model.js';

/**
 * What the host prints for one piece of its shell's input — a script, or a word a running script
 * reads (verify's `stop`) — and how that piece ends. `signal` aborts when the channel closes (a
 * responder may honour it, as a real host's processes end with their channel).
 */
export type Responder = (input: string, signal: AbortSignal) => HostAnswer | Promise<HostAnswer>;

/**
 * What the host printed and how the piece ended. No `cut`: a session decides that itself, from
 * how much the host printed (more than OUTPUT_KEEP), as the real one does.
 */
export type HostAnswer = Omit<ExecResult, 'cut'>;

export interface FakeHost {
  /** Throw this instead of connecting. */
  readonly connectError?: Error;
  /** Answers each piece of input in turn: probe first, then apply, ... */
  readonly respond: Responder;
  /** Delay before connect resolves (for concurrency and timeout tests). */
  readonly connectDelayMs?: number;
}

export interface FakeLog {
  /** Every piece of input each host's shells were sent, in order. */
  readonly scripts: Map<number, string[]>;
  maxInFlight: number;
}

/**
 * One channel's remote side as `sh -s` behaves: it reads its input a piece at a time (each write
 * the session makes) and runs it. A piece that ends with status 0 leaves the shell reading its
 * input — after a conversation's first script it waits for what comes next, as the real one does —
 * and the end of its input ends the shell with the last status; a piece that ends otherwise (a
 * script's `exit N`, a signal) ends the shell at once. Closing the channel ends everything.
 */
class FakeShell extends EventEmitter implements ShellChannel {
  readonly stderr = new EventEmitter();
  private readonly input: string[] = [];
  private inputEnded = false;
  private closed = false;
  private readonly ended = new AbortController();
  private wake: (() => void) | undefined;

  constructor(
    private readonly respond: Responder,
    private readonly record: (piece: string) => void,
  ) {
    super();
    void this.live();
  }

  write(data: string): boolean {
    this.input.push(data);
    this.wake?.();
    return true;
  }

  end(data?: string): void {
    if (data !== undefined) this.input.push(data);
    this.inputEnded = true;
    this.wake?.();
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.ended.abort();
    this.wake?.();
    queueMicrotask(() => this.emit('close'));
  }

  private async next(): Promise<string | undefined> {
    while (this.input.length === 0 && !this.inputEnded && !this.closed)
      await new Promise<void>((resolve) => (this.wake = resolve));
    return this.input.shift();
  }

  private async live(): Promise<void> {
    let last: HostAnswer = { code: 0, signal: undefined, stdout: '', stderr: '' };
    for (;;) {
      const piece = await this.next();
      if (this.closed) return;
      if (piece === undefined) return this.exit(last);
      this.record(piece);
      try {
        last = await this.respond(piece, this.ended.signal);
      } catch {
        // A responder that fails is a connection lost: the channel closes without an exit status.
        return this.close();
      }
      if (this.closed) return;
      if (last.stdout) this.emit('data', Buffer.from(last.stdout));
      if (last.stderr) this.stderr.emit('data', Buffer.from(last.stderr));
      if (last.code !== 0) return this.exit(last);
    }
  }

  private exit(result: HostAnswer): void {
    this.emit('exit', result.code, result.signal);
    this.close();
  }
}

export function fakeTransport(hosts: Record<number, FakeHost>): Transport & { log: FakeLog } {
  const log: FakeLog = { scripts: new Map(), maxInFlight: 0 };
  let inFlight = 0;
  return {
    log,
    async connect(host: Host, signal: AbortSignal): Promise<Session> {
      const fake = hosts[host.id];
      if (!fake) throw new ConnectError(`no route to ${host.target}`, true);
      inFlight++;
      log.maxInFlight = Math.max(log.maxInFlight, inFlight);
      try {
        if (fake.connectDelayMs) {
          await new Promise<void>((resolve, reject) => {
            const t = setTimeout(resolve, fake.connectDelayMs);
            signal.addEventListener('abort', () => {
              clearTimeout(t);
              reject(new ConnectError('connection interrupted', true));
            });
          });
        }
        if (fake.connectError) throw fake.connectError;
      } catch (error) {
        inFlight--;
        throw error;
      }
      const scripts: string[] = [];
      log.scripts.set(host.id, scripts);
      let open = true;
      // The part of ssh2's Client that SshSession uses: a session channel per exec, and the ends.
      const client = {
        exec(_command: string, opened: (error: Error | undefined, channel: ShellChannel) => void) {
          setImmediate(() => opened(undefined, new FakeShell(fake.respond, (piece) => scripts.push(piece))));
        },
        end() {
          if (open) inFlight--;
          open = false;
        },
        destroy() {},
      };
      return new SshSession(
        client as unknown as Client,
        [client as unknown as Client],
        false,
        async () => undefined,
        [],
        `root@${host.target}`,
      );
    },
  };
}

export const ok = (stdout: string): HostAnswer => ({ code: 0, signal: undefined, stdout, stderr: '' });

export function fixture(name: string): string {
  return readFileSync(new URL(`../fixtures/probe/${name}`, import.meta.url), 'utf8');
}

/**
 * The deployed-host fixture with its `files` section recomputed from the current renderer, so the
 * fixture keeps describing "everything deploy installed" when the rendered text evolves.
 */
export function deployedProbe(host: Host, fleet: Fleet, playbook: Playbook, manager: Manager): string {
  const text = fixture('netplan-deployed.txt');
  const files = filesOf(host, fleet, playbook, manager).flatMap((f) => [
    `${f.mode.toString(8)} 0 ${f.path}`,
    `${sha256(f.content)}  ${f.path}`,
  ]);
  return text.replace(
    /@@ibfleet files\n(?:(?!@@ibfleet ).*\n)*/,
    `@@ibfleet files\n${files.map((l) => `${l}\n`).join('')}`,
  );
}

/** A responder that answers the probe with `before`, and an apply with its log plus `after`. */
export function stateful(before: string, after: string, applyLog = 'ibfleet-routes: ib0: configured'): Responder {
  return (script) => (script.includes(AFTER_MARK) ? ok(`${applyLog}\n${AFTER_MARK}\n${after}`) : ok(before));
}

/**
 * A table-driven fake of the transport seam for unit tests of planning and error paths. Each host
 * answers scripts from a list of handlers; the real ssh2 transport is covered end to end in the lab.
 */
import { readFileSync } from 'node:fs';
import type { Fleet, Host } from '../../src/inventory/model.js';
import { sha256 } from '../../src/script/digest.js';
import type { Playbook } from '../../src/playbook/playbook.js';
import { AFTER_MARK } from '../../src/render/apply-script.js';
import { filesOf } from '../fixtures/fixtures.js';
import type { Continuation, Conversation, ExecOptions, ExecResult, Session, Transport } from '../../src/runner/transport.js';
import { ConnectError } from '../../src/runner/transport.js';
import type { Manager } from '../../src/inventory/model.js';

/** `signal`: the one the run was given (a responder may honour it, as a real host's channel ends). */
export type Responder = (script: string, signal?: AbortSignal) => ExecResult | Promise<ExecResult>;

export interface FakeHost {
  /** Throw this instead of connecting. */
  readonly connectError?: Error;
  /** Answers each script in turn: probe first, then apply, ... */
  readonly respond: Responder;
  /** Delay before connect resolves (for concurrency and timeout tests). */
  readonly connectDelayMs?: number;
}

export interface FakeLog {
  readonly scripts: Map<number, string[]>;
  maxInFlight: number;
}

/**
 * `converse: true` makes the sessions offer `converse`, as the ssh2 transport does: the scripts of
 * a conversation go to one shell over one channel, each answered in turn by the host's responder.
 */
export function fakeTransport(hosts: Record<number, FakeHost>, options: { converse?: boolean } = {}): Transport & { log: FakeLog } {
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
      let channels = 0;
      const scripts: string[] = [];
      log.scripts.set(host.id, scripts);
      const session: Session = {
        get channels() {
          return channels;
        },
        notes: [],
        async run(script: string, runOptions?: ExecOptions) {
          channels++;
          scripts.push(script);
          const result = await fake.respond(script, runOptions?.signal);
          if (runOptions?.onLine) for (const line of result.stdout.split('\n')) runOptions.onLine(line);
          return result;
        },
        close() {
          inFlight--;
        },
      };
      if (options.converse) {
        session.converse = async (script: string, until: string, next: (output: string) => Continuation | undefined | Promise<Continuation | undefined>, conversation?: ExecOptions): Promise<Conversation> => {
          channels++;
          scripts.push(script);
          const answer = await fake.respond(script, conversation?.signal);
          const lines = answer.stdout.split('\n');
          const end = lines.indexOf(until);
          if (end < 0) return { ...answer, first: undefined };
          const first = `${lines.slice(0, end + 1).join('\n')}\n`;
          const continuation = await next(first);
          if (!continuation) return { code: answer.code, signal: answer.signal, stdout: '', stderr: answer.stderr, first };
          scripts.push(continuation.script);
          const rest = await fake.respond(continuation.script, continuation.options?.signal ?? conversation?.signal);
          if (continuation.options?.onLine) for (const line of rest.stdout.split('\n')) continuation.options.onLine(line);
          return { ...rest, first };
        };
      }
      return session;
    },
  };
}

export const ok = (stdout: string): ExecResult => ({ code: 0, signal: undefined, stdout, stderr: '' });

export function fixture(name: string): string {
  return readFileSync(new URL(`../fixtures/probe/${name}`, import.meta.url), 'utf8');
}

/**
 * The deployed-host fixture with its `files` section recomputed from the current renderer, so the
 * fixture keeps describing "everything deploy installed" when the rendered text evolves.
 */
export function deployedProbe(host: Host, fleet: Fleet, playbook: Playbook, manager: Manager): string {
  const text = fixture('netplan-deployed.txt');
  const files = filesOf(host, fleet, playbook, manager).flatMap((f) => [`${f.mode.toString(8)} 0 ${f.path}`, `${sha256(f.content)}  ${f.path}`]);
  return text.replace(/@@ibfleet files\n(?:(?!@@ibfleet ).*\n)*/, `@@ibfleet files\n${files.map((l) => `${l}\n`).join('')}`);
}

/** A responder that answers the probe with `before`, and an apply with its log plus `after`. */
export function stateful(before: string, after: string, applyLog = 'ibfleet-routes: ib0: configured'): Responder {
  return (script) => (script.includes(AFTER_MARK) ? ok(`${applyLog}\n${AFTER_MARK}\n${after}`) : ok(before));
}

/**
 * The production transport: ssh2, one connection per host per command, host keys checked against
 * known_hosts, auth by agent and identity files, ProxyJump, and sudo with the password sent on
 * stdin only. This file (and jump hosts' forwarding) is the only code that touches ssh2.
 */
import { createPrivateKey, type KeyObject } from 'node:crypto';
import { appendFile, mkdir, readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import pLimit from 'p-limit';
import ssh2 from 'ssh2';
import type { ClientChannel, ConnectConfig, ParsedKey } from 'ssh2';
import type { Fleet, Host } from '../inventory/model.js';
import { shellQuote } from '../render/shell.js';
import {
  checkHostKey,
  fingerprint,
  formatKnownHostsLine,
  keyTypeOf,
  knownHostsName,
  knownKeyTypes,
  parseKnownHosts,
  patternsMatch,
  type KnownHostEntry,
} from './known-hosts.js';
import { defaultSshEnvironment, parseSshConfig, resolveSshTarget, type SshEndpoint, type SshEnvironment } from './ssh-target.js';
import { ConnectError, type Continuation, type Conversation, type ExecOptions, type ExecResult, type Session, type Transport } from './transport.js';

const { Client, utils } = ssh2;
type ClientT = InstanceType<typeof Client>;

export interface SshTransportOptions {
  readonly fleet: Fleet;
  /** --known-hosts, else the inventory's ssh.knownHosts, else ~/.ssh/known_hosts. */
  readonly knownHostsFile?: string | undefined;
  readonly acceptNew: boolean;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Asked at most once per run, only when a host's sudo wants a password. */
  readonly sudoPassword?: (() => Promise<string | undefined>) | undefined;
  /** Handshake limit; the runner's per-host timeout bounds everything else. */
  readonly connectTimeoutMs: number;
}

const HOST_KEY_ALGORITHMS: Readonly<Record<string, readonly string[]>> = {
  'ssh-ed25519': ['ssh-ed25519'],
  'ecdsa-sha2-nistp256': ['ecdsa-sha2-nistp256'],
  'ecdsa-sha2-nistp384': ['ecdsa-sha2-nistp384'],
  'ecdsa-sha2-nistp521': ['ecdsa-sha2-nistp521'],
  'ssh-rsa': ['rsa-sha2-512', 'rsa-sha2-256', 'ssh-rsa'],
};
const DEFAULT_HOST_KEY_ORDER = ['ssh-ed25519', 'ecdsa-sha2-nistp256', 'ecdsa-sha2-nistp384', 'ecdsa-sha2-nistp521', 'rsa-sha2-512', 'rsa-sha2-256', 'ssh-rsa'];

/** A marker line sudo's shell prints before reading the script, and a prompt no real tool uses. */
const SUDO_PROMPT = '[ibfleet-sudo-password-7f3a]';
const SUDO_READY = 'IBFLEET-SUDO-READY-7f3a';

export class KnownHostsStore {
  private entries: KnownHostEntry[] = [];
  private appending: Promise<void> = Promise.resolve();
  /**
   * Entries that can concern one host name: those whose patterns match it, and every @revoked key
   * (a revoked key is refused whatever name it comes under). Matching a name against every line —
   * an HMAC per hashed line — once per lookup, twice per connection, for hundreds of hosts against
   * a known_hosts of hundreds of lines adds up: each name is matched once per run, and lines that
   * name hosts literally (what ssh-keyscan and `lab up` write) are found by name, not by a scan.
   */
  private readonly relevant = new Map<string, readonly KnownHostEntry[]>();
  private index: { byName: Map<string, number[]>; scanned: number[] } | undefined;
  constructor(readonly file: string) {}

  async load(): Promise<void> {
    try {
      this.entries = parseKnownHosts(await readFile(this.file, 'utf8'));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      this.entries = [];
    }
    this.forget();
  }

  get all(): readonly KnownHostEntry[] {
    return this.entries;
  }

  /** A subset of the entries that gives checkHostKey and knownKeyTypes the same answers for `name`. */
  for(name: string): readonly KnownHostEntry[] {
    let found = this.relevant.get(name);
    if (!found) {
      const { byName, scanned } = (this.index ??= this.buildIndex());
      const positions = [...(byName.get(name.toLowerCase()) ?? []), ...scanned.filter((i) => this.entries[i]!.marker === 'revoked' || patternsMatch(this.entries[i]!.patterns, name))];
      found = positions.sort((a, b) => a - b).map((i) => this.entries[i]!);
      this.relevant.set(name, found);
    }
    return found;
  }

  /** Positions of literal-name lines by name; every other line (hashed, wildcards, negations, @revoked) is matched one by one. */
  private buildIndex(): { byName: Map<string, number[]>; scanned: number[] } {
    const byName = new Map<string, number[]>();
    const scanned: number[] = [];
    this.entries.forEach((e, i) => {
      if (e.marker === 'revoked' || e.patterns.startsWith('|') || /[*?!]/.test(e.patterns)) return void scanned.push(i);
      for (const name of new Set(e.patterns.toLowerCase().split(','))) byName.set(name, [...(byName.get(name) ?? []), i]);
    });
    return { byName, scanned };
  }

  private forget(): void {
    this.relevant.clear();
    this.index = undefined;
  }

  /** Appends one line; appends are serialised so parallel --accept-new hosts never interleave. */
  record(name: string, key: Buffer): Promise<void> {
    const line = formatKnownHostsLine(name, key);
    this.appending = this.appending.then(async () => {
      await mkdir(dirname(this.file), { recursive: true, mode: 0o700 });
      await appendFile(this.file, `${line}\n`, { mode: 0o600 });
      this.entries.push(...parseKnownHosts(line));
      this.forget();
    });
    return this.appending;
  }
}

interface Identity {
  readonly file: string;
  /** Parsed once per run, not once per connection. */
  readonly key: ParsedKey | undefined;
  /** Why it cannot be used (missing, encrypted, unreadable). */
  readonly problem: string | undefined;
}

/**
 * ssh2 keeps a parsed private key as PEM text and hands that text to crypto.sign, so OpenSSL decodes
 * the PEM again for every signature — about 0.5 ms, once per connection, which is most of what
 * authentication costs a fleet run. Given a KeyObject, crypto.sign skips the decoding. The swap is
 * made only if the key still signs verifiably afterwards; otherwise the key stays as ssh2 made it.
 */
function withDecodedSigningKey(key: ParsedKey): ParsedKey {
  const slot = Object.getOwnPropertySymbols(key).find((sym) => sym.description === 'Private key PEM');
  const record = key as unknown as Record<symbol, unknown>;
  const pem = slot ? record[slot] : undefined;
  if (!slot || typeof pem !== 'string') return key;
  let decoded: KeyObject;
  try {
    decoded = createPrivateKey(pem);
  } catch {
    return key;
  }
  const probe = Buffer.from('ibfleet signing key check');
  const before = key.sign(probe);
  record[slot] = decoded;
  const after = key.sign(probe);
  const ok = Buffer.isBuffer(before) && Buffer.isBuffer(after) && key.verify(probe, after) === true;
  if (!ok) record[slot] = pem;
  return key;
}

export function sshTransport(options: SshTransportOptions): Transport {
  const env: SshEnvironment = defaultSshEnvironment(options.env);
  const knownHostsFile = options.knownHostsFile ?? options.fleet.ssh.knownHosts ?? join(env.home, '.ssh', 'known_hosts');
  const knownHosts = new KnownHostsStore(knownHostsFile.replace(/^~(?=\/)/, env.home));
  const identities = new Map<string, Promise<Identity>>();
  let prepared: Promise<ReturnType<typeof parseSshConfig> | undefined> | undefined;
  let sudoPassword: Promise<string | undefined> | undefined;

  const prepare = () =>
    (prepared ??= (async () => {
      await knownHosts.load();
      const configFile = options.fleet.ssh.config ?? join(env.home, '.ssh', 'config');
      try {
        return parseSshConfig(await readFile(configFile.replace(/^~(?=\/)/, env.home), 'utf8'));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        throw new ConnectError(`cannot read ssh config ${configFile}: ${(error as Error).message}`, false);
      }
    })());

  const loadIdentity = (file: string) => {
    let found = identities.get(file);
    if (!found) {
      found = readFile(file).then(
        (data): Identity => {
          const parsed = utils.parseKey(data);
          if (parsed instanceof Error) {
            const encrypted = /encrypted/i.test(parsed.message);
            return { file, key: undefined, problem: encrypted ? 'encrypted (load it into ssh-agent)' : parsed.message };
          }
          const key = Array.isArray(parsed) ? parsed[0] : parsed;
          if (!key || !key.isPrivateKey()) return { file, key: undefined, problem: 'not a private key' };
          return { file, key: withDecodedSigningKey(key), problem: undefined };
        },
        (error: NodeJS.ErrnoException): Identity => ({ file, key: undefined, problem: error.code === 'ENOENT' ? 'missing' : error.message }),
      );
      identities.set(file, found);
    }
    return found;
  };

  const getSudoPassword = () => (sudoPassword ??= options.sudoPassword ? options.sudoPassword() : Promise.resolve(undefined));

  async function open(endpoint: SshEndpoint, sock: NodeJS.ReadableStream | undefined, signal: AbortSignal, notes: string[]): Promise<ClientT> {
    const name = knownHostsName(endpoint.hostName, endpoint.port);
    const known = knownKeyTypes(knownHosts.for(name), name);
    const preferred = known.flatMap((t) => HOST_KEY_ALGORITHMS[t] ?? []);
    const hostKeyOrder = [...new Set([...preferred, ...DEFAULT_HOST_KEY_ORDER])];
    const ids = await Promise.all(endpoint.identityFiles.map(loadIdentity));
    const usable = ids.filter((i) => i.key !== undefined);
    const agent = endpoint.identitiesOnly ? undefined : options.env.SSH_AUTH_SOCK;
    const attempts: ({ type: 'agent'; username: string; agent: string } | { type: 'publickey'; username: string; key: ParsedKey })[] = [];
    if (agent) attempts.push({ type: 'agent', username: endpoint.user, agent });
    for (const i of usable) attempts.push({ type: 'publickey', username: endpoint.user, key: i.key! });
    if (attempts.length === 0) {
      const tried = ids.map((i) => `${i.file} (${i.problem})`).join(', ');
      throw new ConnectError(`no usable SSH key for ${endpoint.user}@${endpoint.alias}: no ssh-agent and ${tried || 'no identity files'}`, false);
    }

    let verdictMessage: string | undefined;
    const client = new Client();
    return new Promise<ClientT>((resolve, reject) => {
      let settled = false;
      const fail = (error: Error) => {
        if (settled) return;
        settled = true;
        signal.removeEventListener('abort', onAbort);
        client.end();
        reject(error);
      };
      const onAbort = () => fail(new ConnectError(`connection to ${endpoint.alias} interrupted`, true));
      signal.addEventListener('abort', onAbort, { once: true });

      client.once('ready', () => {
        if (settled) return client.end();
        settled = true;
        signal.removeEventListener('abort', onAbort);
        resolve(client);
      });
      client.on('error', (error: Error & { level?: string; code?: string }) => {
        if (verdictMessage) return fail(new ConnectError(verdictMessage, false));
        fail(classifyConnectError(error, endpoint, ids, agent !== undefined));
      });
      client.once('close', () => settled || fail(new ConnectError(`${endpoint.alias} closed the connection during the handshake`, true)));

      const config: ConnectConfig = {
        host: endpoint.hostName,
        port: endpoint.port,
        username: endpoint.user,
        readyTimeout: options.connectTimeoutMs,
        keepaliveInterval: 15_000,
        algorithms: { serverHostKey: hostKeyOrder as never },
        authHandler: (_methodsLeft, _partial, next) => {
          const attempt = attempts.shift();
          next((attempt ?? false) as never);
        },
        hostVerifier: (key: Buffer, verify: (ok: boolean) => void) => {
          const verdict = checkHostKey(knownHosts.for(name), name, key);
          const fp = fingerprint(key);
          switch (verdict.kind) {
            case 'known':
              return verify(true);
            case 'unknown':
              if (!options.acceptNew) {
                verdictMessage = `host key of ${name} is not in ${knownHosts.file} (${keyTypeOf(key)} ${fp}); verify it, then run again with --accept-new or add it with ssh-keyscan`;
                return verify(false);
              }
              notes.push(`recorded new host key for ${name} (${keyTypeOf(key)} ${fp}) in ${knownHosts.file}`);
              return void knownHosts.record(name, key).then(
                () => verify(true),
                (error: Error) => {
                  verdictMessage = `cannot record host key in ${knownHosts.file}: ${error.message}`;
                  verify(false);
                },
              );
            case 'changed':
              verdictMessage = `WARNING: HOST KEY OF ${name} HAS CHANGED (now ${keyTypeOf(key)} ${fp}; ${knownHosts.file} line ${verdict.lines.join(', ')}). Someone could be intercepting the connection, or the host was reinstalled. Nothing was done on this host; if the change is expected, remove the old key with: ssh-keygen -R ${shellQuote(name)} -f ${shellQuote(knownHosts.file)}`;
              return verify(false);
            case 'other-types':
              verdictMessage = `${name} presented a ${keyTypeOf(key)} key (${fp}) but ${knownHosts.file} only has ${verdict.knownTypes.join(', ')} keys for it; verify and add the new key with ssh-keyscan`;
              return verify(false);
            case 'revoked':
              verdictMessage = `host key of ${name} is marked @revoked in ${knownHosts.file} line ${verdict.line}; refusing to connect`;
              return verify(false);
          }
        },
      };
      if (sock) config.sock = sock as never;
      client.connect(config);
    });
  }

  return {
    async connect(host: Host, signal: AbortSignal): Promise<Session> {
      const config = await prepare();
      const target = resolveSshTarget(host, options.fleet, config, env);
      const notes: string[] = [];
      const opened: ClientT[] = [];
      try {
        // Outermost jump first; each hop's client forwards a stream to the next.
        const hops = [...target.jumps, target];
        let sock: NodeJS.ReadableStream | undefined;
        for (let i = 0; i < hops.length; i++) {
          const client = await open(hops[i]!, sock, signal, notes);
          opened.push(client);
          if (i + 1 < hops.length) sock = await forward(client, hops[i + 1]!);
        }
      } catch (error) {
        for (const c of opened.reverse()) c.end();
        throw error;
      }
      const client = opened[opened.length - 1]!;
      return new SshSession(client, opened, target.sudo, getSudoPassword, notes, `${target.user}@${target.alias}`);
    },
  };
}

function forward(client: ClientT, next: SshEndpoint): Promise<NodeJS.ReadableStream> {
  return new Promise((resolve, reject) => {
    client.forwardOut('127.0.0.1', 0, next.hostName, next.port, (error, stream) => {
      if (error) reject(new ConnectError(`jump host cannot reach ${next.hostName}:${next.port}: ${error.message}`, true));
      else resolve(stream as unknown as NodeJS.ReadableStream);
    });
  });
}

function classifyConnectError(error: Error & { level?: string; code?: string }, endpoint: SshEndpoint, ids: readonly Identity[], triedAgent: boolean): ConnectError {
  const where = `${endpoint.hostName}:${endpoint.port}`;
  const code = error.code ?? '';
  if (error.level === 'client-authentication') {
    const tried = [...(triedAgent ? ['ssh-agent'] : []), ...ids.filter((i) => i.key).map((i) => i.file)];
    const skipped = ids.filter((i) => !i.key && i.problem !== 'missing').map((i) => `${i.file}: ${i.problem}`);
    return new ConnectError(
      `authentication as ${endpoint.user} on ${endpoint.alias} failed (tried ${tried.join(', ') || 'nothing'}${skipped.length ? `; skipped ${skipped.join(', ')}` : ''}); is the key in authorized_keys?`,
      false,
    );
  }
  if (error.level === 'client-timeout' || /Timed out while waiting for handshake/i.test(error.message)) {
    return new ConnectError(`no SSH handshake from ${where} within the time limit`, true);
  }
  const reasons: Record<string, string> = {
    ECONNREFUSED: `connection refused by ${where} (is sshd running?)`,
    ETIMEDOUT: `connection to ${where} timed out`,
    EHOSTUNREACH: `no route to ${where}`,
    ENETUNREACH: `network unreachable for ${where}`,
    ENOTFOUND: `cannot resolve ${endpoint.hostName}`,
    EAI_AGAIN: `cannot resolve ${endpoint.hostName} (DNS not answering)`,
    ECONNRESET: `${where} reset the connection`,
  };
  if (reasons[code]) return new ConnectError(reasons[code]!, true);
  return new ConnectError(`cannot connect to ${where}: ${error.message}`, true);
}

/** sshd's default MaxSessions is 10; stay under it whatever the callers ask for at once. */
const MAX_CHANNELS_PER_CONNECTION = 8;

class SshSession implements Session {
  channels = 0;
  private readonly limit = pLimit(MAX_CHANNELS_PER_CONNECTION);
  constructor(
    private readonly client: ClientT,
    private readonly chain: readonly ClientT[],
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

  converse(script: string, until: string, next: (firstOutput: string) => Continuation | undefined, options: ExecOptions = {}): Promise<Conversation> {
    return this.limit(() => this.open(script, options, { until, next }));
  }

  private open(script: string, options: ExecOptions, conversation: ConversationPlan | undefined): Promise<Conversation> {
    const command = this.sudo ? `sudo -S -p ${shellQuote(SUDO_PROMPT)} sh -c ${shellQuote(`echo ${SUDO_READY}; exec sh -s`)}` : 'sh -s';
    return new Promise<Conversation>((resolve, reject) => {
      this.client.exec(command, (error, channel) => {
        if (error) return reject(new ConnectError(`${this.who}: cannot open a session channel: ${error.message}`, false));
        this.channels++;
        collect(channel, script, this.sudo, this.sudoPassword, this.who, options, conversation).then(resolve, reject);
      });
    });
  }
}

interface ConversationPlan {
  readonly until: string;
  readonly next: (firstOutput: string) => Continuation | undefined;
}

function collect(
  channel: ClientChannel,
  script: string,
  sudo: boolean,
  sudoPassword: () => Promise<string | undefined>,
  who: string,
  firstOptions: ExecOptions,
  conversation: ConversationPlan | undefined,
): Promise<Conversation> {
  return new Promise((resolve, reject) => {
    let stdout = '';
    let stderr = '';
    let pending = '';
    let code: number | null = null;
    let signal: string | undefined;
    let ready = !sudo;
    let prompts = 0;
    let failure: Error | undefined;
    let options = firstOptions;
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

    /** The first script has finished speaking: ask what comes next and send it, or end the shell's input. */
    const turn = (at: number) => {
      first = stdout.slice(0, at);
      stdout = stdout.slice(at);
      let continuation: Continuation | undefined;
      try {
        continuation = conversation!.next(first);
      } catch (error) {
        failure = error as Error;
        channel.close();
        return;
      }
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

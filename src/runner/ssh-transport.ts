/**
 * The production transport: ssh2, one connection per host per command, host keys checked against
 * known_hosts, auth by agent and identity files, ProxyJump, and sudo with the password sent on
 * stdin only. This file opens connections (the handshake, host keys, auth, jump hosts, what a
 * failure means); ssh-session.ts runs scripts over them. Together with ssh-identities.ts (and
 * ssh2-parts.ts, which loads it) they are the only code that touches ssh2.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ConnectConfig, ParsedKey } from 'ssh2';
import { UsageError } from '../errors.js';
import type { Fleet, Host } from '../inventory/model.js';
import { knownHostsName, knownKeyTypes } from './known-hosts.js';
import { KnownHostsStore } from './known-hosts-store.js';
import { identityLoader, type Identity } from './ssh-identities.js';
import { redactText } from './redact.js';
import { SshSession } from './ssh-session.js';
import { Client } from './ssh2-parts.js';
import {
  defaultSshEnvironment,
  parseSshConfig,
  resolveSshTarget,
  type SshEndpoint,
  type SshEnvironment,
  type SshTarget,
} from './ssh-target.js';
import { ConnectError, type Session, type Transport } from './transport.js';

type ClientT = InstanceType<typeof Client>;

export interface SshTransportOptions {
  readonly fleet: Fleet;
  /** --known-hosts, else the inventory's ssh.knownHosts, else ~/.ssh/known_hosts. */
  readonly knownHostsFile?: string | undefined;
  readonly acceptNew: boolean;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Asked at most once per run, only when a host's sudo wants a password. */
  readonly sudoPassword?: (() => Promise<string | undefined>) | undefined;
  /**
   * Secrets known before any host is contacted (-K's password, asked up front): a host may print
   * it before its sudo ever asks for it (a ~/.bashrc that holds it, prints it and exits), so it is
   * taken out of every text from the start, not only once sudo asked.
   */
  readonly secrets?: () => readonly string[];
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
const DEFAULT_HOST_KEY_ORDER = [
  'ssh-ed25519',
  'ecdsa-sha2-nistp256',
  'ecdsa-sha2-nistp384',
  'ecdsa-sha2-nistp521',
  'rsa-sha2-512',
  'rsa-sha2-256',
  'ssh-rsa',
];

function readSshConfig(configFile: string, home: string): ReturnType<typeof parseSshConfig> | undefined {
  let text: string;
  try {
    text = readFileSync(configFile.replace(/^~(?=\/)/, home), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new UsageError(`cannot read ssh config ${configFile}: ${(error as Error).message}`);
  }
  return parseSshConfig(text, configFile);
}

/** What opening a connection needs, shared by every host and jump host of a run. */
interface Opener {
  readonly knownHosts: KnownHostsStore;
  readonly loadIdentity: (file: string) => Promise<Identity>;
  /** $SSH_AUTH_SOCK. */
  readonly agentSocket: string | undefined;
  readonly acceptNew: boolean;
  readonly connectTimeoutMs: number;
  /** What no text from a host may carry on (the -K password, once asked for). */
  readonly secrets: () => readonly string[];
}

/** The known_hosts file a run reads and writes: --known-hosts, else the inventory's, else ~/.ssh/known_hosts. */
function knownHostsPath(options: Pick<SshTransportOptions, 'knownHostsFile' | 'fleet'>, env: SshEnvironment): string {
  return (options.knownHostsFile ?? options.fleet.ssh.knownHosts ?? join(env.home, '.ssh', 'known_hosts')).replace(
    /^~(?=\/)/,
    env.home,
  );
}

/** Where the transport keeps `hosts`' keys: the file, and each host's name in it (`addr`, `[addr]:port`), as a run would look it up. */
export function knownHostsOf(
  options: Pick<SshTransportOptions, 'knownHostsFile' | 'fleet' | 'env'>,
  hosts: readonly Host[],
): { file: string; names: Map<number, string> } {
  const env = defaultSshEnvironment(options.env);
  const sshConfig = readSshConfig(options.fleet.ssh.config ?? join(env.home, '.ssh', 'config'), env.home);
  const names = new Map(
    hosts.map((h) => {
      const target = resolveSshTarget(h, options.fleet, sshConfig, env);
      return [h.id, knownHostsName(target.hostName, target.port)] as const;
    }),
  );
  return { file: knownHostsPath(options, env), names };
}

export function sshTransport(options: SshTransportOptions): Transport {
  const env: SshEnvironment = defaultSshEnvironment(options.env);
  const knownHostsFile = knownHostsPath(options, env);
  const knownHosts = new KnownHostsStore(knownHostsFile);
  // Read and checked now, before any host is contacted: a broken config is the user's input error
  // (exit 2, with its line), not a failure repeated on every host.
  const sshConfig = readSshConfig(options.fleet.ssh.config ?? join(env.home, '.ssh', 'config'), env.home);
  let loaded: Promise<void> | undefined;
  const sudo = sudoPasswordOnce(options.sudoPassword, options.secrets ?? (() => []));
  const opener: Opener = {
    knownHosts,
    loadIdentity: identityLoader(),
    agentSocket: options.env.SSH_AUTH_SOCK,
    acceptNew: options.acceptNew,
    connectTimeoutMs: options.connectTimeoutMs,
    secrets: sudo.secrets,
  };

  return {
    async connect(host: Host, signal: AbortSignal): Promise<Session> {
      await (loaded ??= knownHosts.load());
      const target = resolveSshTarget(host, options.fleet, sshConfig, env);
      const notes: string[] = [];
      const opened: ClientT[] = [];
      try {
        // Outermost jump first; each hop's client forwards a stream to the next.
        const hops = [...target.jumps, target];
        let sock: NodeJS.ReadableStream | undefined;
        for (let i = 0; i < hops.length; i++) {
          const client = await openClient(opener, hops[i]!, sock, signal, notes);
          opened.push(client);
          if (i + 1 < hops.length) sock = await forward(client, hops[i + 1]!, sudo.secrets);
        }
      } catch (error) {
        for (const c of opened.reverse()) c.destroy();
        throw error;
      }
      const client = opened[opened.length - 1]!;
      return new SshSession(
        client,
        opened,
        target.sudo,
        sudo.ask,
        notes,
        `${target.user}@${target.alias}`,
        sudo.secrets,
      );
    },
  };
}

/**
 * The sudo password, asked at most once per run and only when a host's sudo wants it. It is a
 * secret from the moment it is asked for (or known: SshTransportOptions.secrets), so every text a host sends after that has it taken out
 * (redact.ts): the password is written to a channel only once the answer has settled.
 */
function sudoPasswordOnce(
  askUser: SshTransportOptions['sudoPassword'],
  known: () => readonly string[],
): { ask: () => Promise<string | undefined>; secrets: () => readonly string[] } {
  let asked: Promise<string | undefined> | undefined;
  let password: string | undefined;
  return {
    ask: () =>
      (asked ??= (askUser ? askUser() : Promise.resolve(undefined)).then((value) => {
        password = value;
        return value;
      })),
    secrets: () => [...new Set([...known(), ...(password === undefined ? [] : [password])])].filter((s) => s !== ''),
  };
}

type AuthAttempt =
  { type: 'agent'; username: string; agent: string } | { type: 'publickey'; username: string; key: ParsedKey };

/** Who to authenticate as, in order: the agent (unless IdentitiesOnly), then each identity file whose key loaded. */
async function authAttempts(
  opener: Opener,
  endpoint: SshEndpoint,
): Promise<{ attempts: AuthAttempt[]; ids: readonly Identity[]; agent: boolean }> {
  const ids = await Promise.all(endpoint.identityFiles.map(opener.loadIdentity));
  const agent = endpoint.identitiesOnly ? undefined : opener.agentSocket;
  const attempts: AuthAttempt[] = [];
  if (agent) attempts.push({ type: 'agent', username: endpoint.user, agent });
  for (const i of ids) if (i.key) attempts.push({ type: 'publickey', username: endpoint.user, key: i.key });
  if (attempts.length === 0) {
    const tried = ids.map((i) => `${i.file} (${i.problem})`).join(', ');
    throw new ConnectError(
      `no usable SSH key for ${endpoint.user}@${endpoint.alias}: no ssh-agent and ${tried || 'no identity files'}`,
      false,
    );
  }
  return { attempts, ids, agent: agent !== undefined };
}

/**
 * The host key check as OpenSSH makes it (known_hosts, --accept-new recording); a refusal's
 * reason goes to `refuse`, since ssh2 reports only that the handshake failed.
 */
function hostVerifier(
  opener: Opener,
  name: string,
  notes: string[],
  refuse: (message: string) => void,
): ConnectConfig['hostVerifier'] {
  return (key: Buffer, verify: (ok: boolean) => void) => {
    const decision = opener.knownHosts.decide(name, key, opener.acceptNew);
    if (!decision.accept) {
      refuse(decision.message);
      return verify(false);
    }
    if (!decision.record) return verify(true);
    notes.push(decision.record);
    opener.knownHosts.record(name, key).then(
      () => verify(true),
      (error: Error) => {
        refuse(`cannot record host key in ${opener.knownHosts.file}: ${error.message}`);
        verify(false);
      },
    );
  };
}

/** Connects to one endpoint (through `sock` when it sits behind a jump host): a ready client, or a ConnectError saying why not. */
async function openClient(
  opener: Opener,
  endpoint: SshEndpoint,
  sock: NodeJS.ReadableStream | undefined,
  signal: AbortSignal,
  notes: string[],
): Promise<ClientT> {
  const name = knownHostsName(endpoint.hostName, endpoint.port);
  // Host key types already known for the host first, so a known host is not refused for offering another.
  const preferred = knownKeyTypes(opener.knownHosts.for(name), name).flatMap((t) => HOST_KEY_ALGORITHMS[t] ?? []);
  const { attempts, ids, agent } = await authAttempts(opener, endpoint);
  let refused: string | undefined;
  const config: ConnectConfig = {
    host: endpoint.hostName,
    port: endpoint.port,
    username: endpoint.user,
    readyTimeout: opener.connectTimeoutMs,
    keepaliveInterval: 15_000,
    algorithms: { serverHostKey: [...new Set([...preferred, ...DEFAULT_HOST_KEY_ORDER])] as never },
    authHandler: (_methodsLeft, _partial, next) => next((attempts.shift() ?? false) as never),
    hostVerifier: hostVerifier(opener, name, notes, (message) => (refused = message)),
    ...(sock ? { sock: sock as never } : {}),
  };
  return handshake(config, signal, endpoint.alias, (error) =>
    // ssh2's messages may quote what the server sent (a disconnect's reason): host text too.
    refused
      ? new ConnectError(refused, false)
      : classifyConnectError(
          Object.assign(error, { message: redactText(error.message, opener.secrets()) }),
          endpoint,
          ids,
          agent,
        ),
  );
}

/** Runs ssh2's handshake and settles once: the ready client, or the error `explain` makes of ssh2's. */
function handshake(
  config: ConnectConfig,
  signal: AbortSignal,
  alias: string,
  explain: (error: Error & { level?: string; code?: string }) => ConnectError,
): Promise<ClientT> {
  const client = new Client();
  return new Promise<ClientT>((resolve, reject) => {
    let settled = false;
    const fail = (error: Error) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      // Destroyed, not ended: a handshake that failed or was given up on has nothing to close
      // gracefully, and an ended socket to a host that went silent lingers for ssh2's keepalive.
      client.destroy();
      reject(error);
    };
    const onAbort = () => fail(new ConnectError(`connection to ${alias} interrupted`, true));
    signal.addEventListener('abort', onAbort, { once: true });
    client.once('ready', () => {
      if (settled) return client.end();
      settled = true;
      signal.removeEventListener('abort', onAbort);
      resolve(client);
    });
    client.on('error', (error: Error & { level?: string; code?: string }) => fail(explain(error)));
    client.once(
      'close',
      () => settled || fail(new ConnectError(`${alias} closed the connection during the handshake`, true)),
    );
    client.connect(config);
  });
}

function forward(client: ClientT, next: SshEndpoint, secrets: () => readonly string[]): Promise<NodeJS.ReadableStream> {
  return new Promise((resolve, reject) => {
    client.forwardOut('127.0.0.1', 0, next.hostName, next.port, (error, stream) => {
      if (error)
        reject(
          new ConnectError(
            `jump host cannot reach ${next.hostName}:${next.port}: ${redactText(error.message, secrets())}`,
            true,
          ),
        );
      else resolve(stream as unknown as NodeJS.ReadableStream);
    });
  });
}

function classifyConnectError(
  error: Error & { level?: string; code?: string },
  endpoint: SshEndpoint,
  ids: readonly Identity[],
  triedAgent: boolean,
): ConnectError {
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

/**
 * Where each host is reached, as the transport would reach it (the inventory's values, then the ssh
 * config the inventory or ~/.ssh names, then OpenSSH's defaults), without connecting: what
 * `ibfleet export ansible` writes into its inventory.
 */
export function resolveTargets(
  fleet: Fleet,
  hosts: readonly Host[],
  envVars: Readonly<Record<string, string | undefined>>,
): Map<number, SshTarget> {
  const env = defaultSshEnvironment(envVars);
  const config = readSshConfig(fleet.ssh.config ?? join(env.home, '.ssh', 'config'), env.home);
  return new Map(hosts.map((h) => [h.id, resolveSshTarget(h, fleet, config, env)]));
}

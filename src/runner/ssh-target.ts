/**
 * Where and how to connect to a host: the inventory's explicit values first (like OpenSSH command-line
 * options), then ~/.ssh/config (HostName, User, Port, IdentityFile, IdentitiesOnly, ProxyJump), then
 * OpenSSH's defaults. Pure given the parsed config and the environment.
 */
import SSHConfig from 'ssh-config';
import { homedir, userInfo } from 'node:os';
import { join } from 'node:path';
import { clipInput, ConfigError, UsageError } from '../errors.js';
import type { Fleet, Host } from '../inventory/model.js';

export interface SshEndpoint {
  /** What the user wrote (inventory target or jump spec). */
  readonly alias: string;
  readonly hostName: string;
  readonly port: number;
  readonly user: string;
  readonly identityFiles: readonly string[];
  readonly identitiesOnly: boolean;
}

export interface SshTarget extends SshEndpoint {
  /** Jump hosts, outermost first. */
  readonly jumps: readonly SshEndpoint[];
  /** Run remote commands through sudo (resolved user is not root, or the inventory says so). */
  readonly sudo: boolean;
}

export interface SshEnvironment {
  readonly home: string;
  readonly localUser: string;
}

export function defaultSshEnvironment(env: Readonly<Record<string, string | undefined>>): SshEnvironment {
  let localUser = env.USER ?? env.LOGNAME;
  if (!localUser) {
    try {
      localUser = userInfo().username;
    } catch {
      localUser = 'root';
    }
  }
  return { home: env.HOME ?? homedir(), localUser };
}

/**
 * Parses an ssh config. The library throws plain errors without a position (an unclosed quote, a
 * Match without its value); the problem is reported at its line, found by parsing line by line,
 * so a broken config is an input error (exit 2) like a broken inventory.
 */
export function parseSshConfig(text: string, file = 'ssh config'): SSHConfig {
  try {
    return SSHConfig.parse(text);
  } catch (error) {
    const lines = text.split('\n');
    const index = lines.findIndex((line) => {
      try {
        SSHConfig.parse(line);
        return false;
      } catch {
        return true;
      }
    });
    const line = index < 0 ? 1 : index + 1;
    const column = index < 0 ? 1 : lines[index]!.search(/\S|$/) + 1;
    const reason = error instanceof Error ? error.message : String(error);
    throw new ConfigError('ssh-config', [
      {
        position: { file, line, column },
        message: `cannot parse this ssh config line: ${clipInput(reason, 80)}`,
        hint: 'close its quotes and give every keyword its value; see ssh_config(5)',
      },
    ]);
  }
}

const DEFAULT_IDENTITIES = ['id_ed25519', 'id_ecdsa', 'id_rsa'];

type Computed = Record<string, string | string[] | undefined>;

function computeFor(config: SSHConfig | undefined, alias: string): Computed {
  if (!config) return {};
  // Match exec is not evaluated: resolving a fleet must not run commands from a config file.
  return config.compute(alias, { ignoreCase: true, matchExec: false } as never) as unknown as Computed;
}

function first(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function all(value: string | string[] | undefined): string[] {
  return value === undefined ? [] : Array.isArray(value) ? value : [value];
}

/** OpenSSH's tokens in HostName and IdentityFile: ~ %d %u %h %r %p %%. */
export function expandTokens(
  text: string,
  tokens: { home: string; localUser: string; host: string; user: string; port: number },
): string {
  const tilde = text === '~' || text.startsWith('~/') ? tokens.home + text.slice(1) : text;
  return tilde.replace(/%([%dhpru])/g, (_, t: string) => {
    switch (t) {
      case '%':
        return '%';
      case 'd':
        return tokens.home;
      case 'h':
        return tokens.host;
      case 'p':
        return String(tokens.port);
      case 'r':
        return tokens.user;
      default:
        return tokens.localUser;
    }
  });
}

function endpoint(
  alias: string,
  explicit: { user?: string | undefined; port?: number | undefined; identityFiles: readonly string[] },
  config: SSHConfig | undefined,
  env: SshEnvironment,
): { endpoint: SshEndpoint; proxyJump: string | undefined } {
  const c = computeFor(config, alias);
  if (first(c.proxycommand) !== undefined && first(c.proxycommand) !== 'none') {
    throw new UsageError(
      `ssh config for ${alias} uses ProxyCommand, which ibfleet does not run; use ProxyJump instead`,
    );
  }
  const port = explicit.port ?? (first(c.port) ? Number(first(c.port)) : 22);
  const user = explicit.user ?? first(c.user) ?? 'root';
  const rawHostName = first(c.hostname) ?? alias;
  const hostName = expandTokens(rawHostName, { ...env, host: alias, user, port });
  const tokens = { ...env, host: hostName, user, port };
  const configured = all(c.identityfile).map((f) => expandTokens(f, tokens));
  const explicitFiles = explicit.identityFiles.map((f) => expandTokens(f, tokens));
  // OpenSSH tries its default identity files only when none is configured.
  const identityFiles =
    explicitFiles.length + configured.length > 0
      ? [...explicitFiles, ...configured]
      : DEFAULT_IDENTITIES.map((f) => join(env.home, '.ssh', f));
  const identitiesOnly = (first(c.identitiesonly) ?? 'no').toLowerCase() === 'yes';
  const jump = first(c.proxyjump);
  return {
    endpoint: { alias, hostName, port, user, identityFiles: [...new Set(identityFiles)], identitiesOnly },
    proxyJump: jump === undefined || jump.toLowerCase() === 'none' ? undefined : jump,
  };
}

/** `user@host:port` (the ProxyJump syntax, also `ssh://user@host:port`). */
export function parseJumpSpec(spec: string): { alias: string; user?: string; port?: number } {
  const text = spec.replace(/^ssh:\/\//, '');
  const match = /^(?:([^@]+)@)?(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(text);
  if (!match) throw new UsageError(`cannot parse ProxyJump entry ${JSON.stringify(spec)}; expected [user@]host[:port]`);
  const alias = match[2]!.replace(/^\[(.*)\]$/, '$1');
  return { alias, ...(match[1] ? { user: match[1] } : {}), ...(match[3] ? { port: Number(match[3]) } : {}) };
}

export function resolveSshTarget(
  host: Host,
  fleet: Fleet,
  config: SSHConfig | undefined,
  env: SshEnvironment,
): SshTarget {
  const explicitFiles = [host.identityFile, fleet.ssh.identityFile].filter((f): f is string => f !== undefined);
  const { endpoint: main, proxyJump } = endpoint(
    host.target,
    { user: host.user, port: host.port, identityFiles: explicitFiles },
    config,
    env,
  );
  const jumps: SshEndpoint[] = [];
  let next = proxyJump;
  const seen = new Set<string>([host.target]);
  // Jump hosts are resolved through the config too; OpenSSH lists them outermost first.
  while (next !== undefined) {
    const chain = next.split(',').map((s) => s.trim());
    const resolved = chain.map((spec) => {
      const j = parseJumpSpec(spec);
      if (seen.has(j.alias)) throw new UsageError(`ProxyJump for ${host.target} loops through ${j.alias}`);
      seen.add(j.alias);
      return endpoint(j.alias, { user: j.user, port: j.port, identityFiles: [] }, config, env);
    });
    jumps.unshift(...resolved.map((r) => r.endpoint));
    // Only the first hop's own ProxyJump extends the chain further out.
    next = resolved[0]?.proxyJump;
  }
  return { ...main, jumps, sudo: host.sudo ?? main.user !== 'root' };
}

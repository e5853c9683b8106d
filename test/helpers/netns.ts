/**
 * A throw-away fabric for execution tests: one network namespace plays the host under test, with
 * veth "NICs" named and addressed like its inventory says (ib0 = 172.16.34.1/16, ...); their peers
 * sit in a second namespace on a bridge that also carries a peer fabric address, like an IB switch
 * with another host behind it. Needs root and iproute2. Nothing outside the two namespaces is
 * touched, and /etc is only ever seen through a private overlay (see `execWithEtc`).
 *
 * A test file takes its fabrics from useFabrics, which destroys each case's in afterEach and every
 * one in afterAll; `destroyAllFabrics()` also runs at process exit as the safety net, so a failing
 * test never leaves namespaces behind. A caller of createFabric itself destroys what it made.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach } from 'vitest';

export interface ExecResult {
  readonly status: number;
  readonly stdout: string;
  readonly stderr: string;
}

export interface FabricNicSpec {
  /** Interface name inside the host namespace, e.g. ib0 or ib0.8001. */
  readonly iface: string;
  /** `a.b.c.d/len`, or undefined to leave the NIC without an address. */
  readonly cidr: string | undefined;
}

export interface FabricOptions {
  readonly nics: readonly FabricNicSpec[];
  /** Address of the peer on the fabric bridge (another host's NIC), `a.b.c.d/len`. */
  readonly peerCidr: string;
}

export interface Fabric {
  /** The host under test. */
  readonly ns: string;
  /** The other side of every veth: a bridge (the fabric switch) with the peer address. */
  readonly peerNs: string;
  readonly peerAddress: string;
  /** `ip -n NS ARGS`; throws with stderr when ip fails. */
  ip(...args: string[]): string;
  /** Runs argv inside the host namespace with exactly `env` (plus a standard PATH). */
  exec(argv: readonly string[], env?: Readonly<Record<string, string>>): ExecResult;
  /**
   * Runs argv inside the host namespace and a private mount namespace in which /etc/ibfleet is
   * the contents of `etcIbfleetDir` (bind-mounted when /etc/ibfleet exists, otherwise through an
   * overlay on /etc whose upper layer is a tmpfs). The machine's /etc is never written.
   */
  execWithEtc(etcIbfleetDir: string, argv: readonly string[], env?: Readonly<Record<string, string>>): ExecResult;
  destroy(): void;
}

const STANDARD_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

const live = new Set<string>();

function run(argv: readonly string[], env: Readonly<Record<string, string>> = {}, input?: string): ExecResult {
  const result = spawnSync(argv[0]!, argv.slice(1), {
    encoding: 'utf8',
    env: { PATH: STANDARD_PATH, ...env },
    input,
    timeout: 30_000,
  });
  if (result.error) throw result.error;
  return { status: result.status ?? 128, stdout: result.stdout, stderr: result.stderr };
}

function must(argv: readonly string[]): string {
  const result = run(argv);
  if (result.status !== 0) throw new Error(`${argv.join(' ')} failed (exit ${result.status}): ${result.stderr.trim()}`);
  return result.stdout;
}

function deleteNamespace(name: string): void {
  run(['ip', 'netns', 'del', name]);
  live.delete(name);
}

/** Removes every namespace this process created and has not removed yet. */
export function destroyAllFabrics(): void {
  for (const name of [...live]) deleteNamespace(name);
}

process.once('exit', destroyAllFabrics);

let counter = 0;

// Mount /etc/ibfleet privately, then exec the command. $1 = source dir, $2 = scratch dir for the overlay.
const PRIVATE_ETC = `set -e
src=$1 scratch=$2
shift 2
if [ -d /etc/ibfleet ]; then
	mount --bind "$src" /etc/ibfleet
else
	mount -t tmpfs ibfleet-test "$scratch"
	mkdir "$scratch/upper" "$scratch/work"
	cp -a "$src" "$scratch/upper/ibfleet"
	mount -t overlay overlay -o "lowerdir=/etc,upperdir=$scratch/upper,workdir=$scratch/work" /etc
fi
set +e
exec "$@"
`;

export function createFabric(options: FabricOptions): Fabric {
  const id = `ibft${process.pid}x${++counter}${randomBytes(2).toString('hex')}`;
  const ns = `${id}-host`;
  const peerNs = `${id}-peer`;
  const peerAddress = options.peerCidr.split('/')[0]!;
  try {
    for (const name of [ns, peerNs]) {
      must(['ip', 'netns', 'add', name]);
      live.add(name);
    }
    must(['ip', '-n', ns, 'link', 'set', 'lo', 'up']);
    must(['ip', '-n', peerNs, 'link', 'set', 'lo', 'up']);
    must(['ip', '-n', peerNs, 'link', 'add', 'br0', 'type', 'bridge']);
    must(['ip', '-n', peerNs, 'link', 'set', 'br0', 'up']);
    must(['ip', '-n', peerNs, 'addr', 'add', options.peerCidr, 'dev', 'br0']);
    options.nics.forEach((nic, i) => {
      must(['ip', '-n', ns, 'link', 'add', nic.iface, 'type', 'veth', 'peer', 'name', `port${i}`, 'netns', peerNs]);
      must(['ip', '-n', peerNs, 'link', 'set', `port${i}`, 'master', 'br0', 'up']);
      must(['ip', '-n', ns, 'link', 'set', nic.iface, 'up']);
      if (nic.cidr !== undefined) must(['ip', '-n', ns, 'addr', 'add', nic.cidr, 'dev', nic.iface]);
    });
  } catch (error) {
    for (const name of [ns, peerNs]) if (live.has(name)) deleteNamespace(name);
    throw error;
  }

  // A /run of its own: what the scripts keep there (the host lock, the routing script's lock) is
  // the namespace host's, never the machine's.
  const exec = (argv: readonly string[], env: Readonly<Record<string, string>> = {}) =>
    run(
      [
        'ip',
        'netns',
        'exec',
        ns,
        'unshare',
        '--mount',
        '--propagation',
        'private',
        'sh',
        '-c',
        'mount -t tmpfs ibfleet-test /run && exec "$@"',
        'sh',
        ...argv,
      ],
      env,
    );
  return {
    ns,
    peerNs,
    peerAddress,
    ip: (...args) => must(['ip', '-n', ns, ...args]),
    exec,
    execWithEtc(etcIbfleetDir, argv, env = {}) {
      const scratch = `/tmp/${id}-etc`;
      must(['mkdir', '-p', scratch]);
      try {
        return exec(
          [
            'unshare',
            '--mount',
            '--propagation',
            'private',
            'sh',
            '-c',
            PRIVATE_ETC,
            'sh',
            etcIbfleetDir,
            scratch,
            ...argv,
          ],
          env,
        );
      } finally {
        run(['rmdir', scratch]);
      }
    },
    destroy() {
      deleteNamespace(ns);
      deleteNamespace(peerNs);
    },
  };
}

/** What a fabric is made for: an inventory host's NICs (model.ts Host has them). */
export interface FabricHost {
  readonly nics: readonly { readonly iface: string; readonly address: string; readonly prefixLength: number }[];
}

export interface FabricHostOptions {
  /** The peer's address, `a.b.c.d/len` (default 172.16.35.1/16: host 35's NIC 1). */
  readonly peerCidr?: string;
  /** The host's NICs left out of the namespace. */
  readonly missing?: readonly string[];
  /** The host's NICs made without their fabric address. */
  readonly unaddressed?: readonly string[];
}

/** A test file's fabrics and scratch directory (useFabrics). */
export interface FabricCases {
  /** The file's scratch directory (scripts, fakes, logs), removed after the file. */
  readonly work: string;
  /**
   * A fabric for the case running, destroyed after it, pass or fail: the host's NICs with their
   * inventory addresses, and a peer (another host's NIC on the fabric).
   */
  createFor(host: FabricHost, options?: FabricHostOptions): Fabric;
  /** Writes `script` to a file of `work` and runs it with sh in the namespace host (its /run its own). */
  runScript(lab: Fabric, script: string): ExecResult;
}

/**
 * The set-up the namespace-host test files share: a scratch directory named `prefix…`, the fabric
 * each case makes destroyed after it (afterEach), every fabric and the directory after the file
 * (afterAll), even when a case fails.
 */
export function useFabrics(prefix: string): FabricCases {
  const work = mkdtempSync(join(tmpdir(), prefix));
  const made: Fabric[] = [];
  afterEach(() => {
    for (const fabric of made.splice(0)) fabric.destroy();
  });
  afterAll(() => {
    destroyAllFabrics();
    rmSync(work, { recursive: true, force: true });
  });
  return {
    work,
    createFor: (host, { peerCidr = '172.16.35.1/16', missing = [], unaddressed = [] } = {}) => {
      const nics = host.nics
        .filter((n) => !missing.includes(n.iface))
        .map((n) => ({
          iface: n.iface,
          cidr: unaddressed.includes(n.iface) ? undefined : `${n.address}/${n.prefixLength}`,
        }));
      const fabric = createFabric({ nics, peerCidr });
      made.push(fabric);
      return fabric;
    },
    runScript: (lab, script) => {
      const path = join(work, `script-${randomBytes(4).toString('hex')}.sh`);
      writeFileSync(path, script);
      return lab.exec(['sh', path]);
    },
  };
}

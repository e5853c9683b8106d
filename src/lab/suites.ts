/**
 * Debian releases a lab host can run on (`lab up --suite trixie`, `--suite 16=bullseye`): the host's
 * whole root is that release's tree — its NetworkManager, systemd-networkd, networkd-dispatcher,
 * netplan, ifupdown, iproute2, sshd and python3 — so the product meets three generations of the
 * managers, not only the machine's own. A root is built once from Debian's mirror with mmdebstrap and
 * kept in a cache that `lab down` never touches. Pure: options, paths and the build script as text;
 * src/lab/roots.ts runs it.
 */
import { UsageError } from '../errors.js';
import { shellQuote } from '../script/shell.js';
import { parseLabHosts } from './options.js';

export const SUITES = ['bullseye', 'bookworm', 'trixie'] as const;
export type Suite = (typeof SUITES)[number];

/** What each suite is, for `lab up` and `lab list`. */
export const SUITE_RELEASE: Readonly<Record<Suite, string>> = {
  bullseye: 'Debian 11',
  bookworm: 'Debian 12',
  trixie: 'Debian 13',
};

/** Where roots are kept unless $IBFLEET_LAB_ROOTS says otherwise: one directory per suite. */
export const DEFAULT_ROOTS_DIR = '/var/cache/ibfleet-lab/roots';

/**
 * What a lab host runs, and the tools the lab itself uses inside it (mount, setsid, awk, dbus-send
 * come with these or are essential). systemd-networkd is not named: from trixie on it is part of
 * the `systemd` package, and naming it fails there.
 */
export const ROOT_PACKAGES: readonly string[] = [
  'openssh-server',
  'iproute2',
  'iputils-ping',
  'network-manager',
  'netplan.io',
  'systemd',
  'networkd-dispatcher',
  'ifupdown',
  'dbus',
  'procps',
  'sudo',
  'python3',
];

/** The packages whose versions `lab up` and `lab list` show, in that order, with a short name. */
export const SHOWN_PACKAGES: readonly (readonly [string, string])[] = [
  ['network-manager', 'NM'],
  ['systemd', 'systemd'],
  ['netplan.io', 'netplan'],
  ['networkd-dispatcher', 'networkd-dispatcher'],
  ['ifupdown', 'ifupdown'],
  ['openssh-server', 'openssh'],
  ['iproute2', 'iproute2'],
  ['python3', 'python3'],
];

export function isSuite(text: string): text is Suite {
  return (SUITES as readonly string[]).includes(text);
}

function checkSuite(text: string, value: string): Suite {
  if (!isSuite(text))
    throw new UsageError(
      `--suite ${value}: ${JSON.stringify(text)} is not a suite the lab builds; use one of ${SUITES.join(', ')}`,
    );
  return text;
}

/**
 * `["trixie"]` → every host trixie; `["16=bullseye", "34-35=trixie"]` → those hosts; a bare suite and
 * HOSTS=SUITE together: the hosts named take theirs, the others the bare one. Later flags win.
 */
export function parseSuiteAssignments(values: readonly string[]): { all?: Suite; hosts: Map<number, Suite> } {
  let all: Suite | undefined;
  const hosts = new Map<number, Suite>();
  for (const value of values) {
    const at = value.indexOf('=');
    if (at < 0) {
      all = checkSuite(value, value);
      continue;
    }
    if (at === 0 || at === value.length - 1)
      throw new UsageError(
        `--suite ${JSON.stringify(value)}: write SUITE or HOSTS=SUITE, e.g. --suite trixie or --suite 16=bullseye`,
      );
    const suite = checkSuite(value.slice(at + 1), value);
    for (const id of parseLabHosts(value.slice(0, at), '--suite')) hosts.set(id, suite);
  }
  return { ...(all !== undefined ? { all } : {}), hosts };
}

/** A suite's cache entry: `root` is the tree hosts lie over, `versions` what `lab list` shows. */
export function suiteDir(rootsDir: string, suite: Suite): string {
  return `${rootsDir}/${suite}`;
}
export function suiteRoot(rootsDir: string, suite: Suite): string {
  return `${suiteDir(rootsDir, suite)}/root`;
}
export function suiteVersionsFile(rootsDir: string, suite: Suite): string {
  return `${suiteDir(rootsDir, suite)}/versions`;
}

/**
 * Builds one suite's root, or waits for the `lab up` that is building it: under an exclusive lock
 * per suite, a root that exists is taken as it is; otherwise mmdebstrap builds into a directory
 * beside it, the versions are recorded, and one rename makes it appear whole — a `lab up` never
 * sees half a root, and two never build the same one. A build that died leaves only its temporary
 * directory, removed by the next.
 */
export function renderRootBuildScript(rootsDir: string, suite: Suite, mirror?: string): string {
  const dir = suiteDir(rootsDir, suite);
  const building = `${rootsDir}/.${suite}.building`;
  const shown = SHOWN_PACKAGES.map(([p]) => p).join(' ');
  return `set -eu
mkdir -p ${shellQuote(rootsDir)}
exec 9>${shellQuote(`${rootsDir}/.${suite}.lock`)}
if ! flock -n 9; then
	echo "another lab up is building the ${suite} root; waiting for it" >&2
	flock 9
fi
[ -f ${shellQuote(`${dir}/versions`)} ] && exit 0
rm -rf ${shellQuote(building)} ${shellQuote(dir)}
mkdir -p ${shellQuote(building)}
echo "building the ${suite} root from Debian's mirror with mmdebstrap (about a minute, ~270 MB) into ${dir}" >&2
mmdebstrap --variant=apt --include=${ROOT_PACKAGES.join(',')} ${suite} ${shellQuote(`${building}/root`)}${mirror ? ` ${shellQuote(mirror)}` : ''}
dpkg-query --admindir=${shellQuote(`${building}/root/var/lib/dpkg`)} -W -f '\${Package}\\t\${Version}\\n' ${shown} >${shellQuote(`${building}/versions`)}
mv ${shellQuote(building)} ${shellQuote(dir)}
echo "the ${suite} root is ready: ${dir}" >&2
`;
}

/** `dpkg-query -W` lines → package → version; anything else in the text is ignored. */
export function parseVersions(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const [pkg, version] = line.split('\t');
    if (pkg && version && /^[a-z0-9][a-z0-9+.-]*$/.test(pkg) && /^[\w.+:~-]+$/.test(version)) out[pkg] = version;
  }
  return out;
}

/** `NM 1.52.1, systemd 257.13, netplan 1.1.2, …`: the upstream versions, without Debian's epoch and revision. */
export function formatVersions(versions: Readonly<Record<string, string>>): string {
  return SHOWN_PACKAGES.filter(([p]) => versions[p] !== undefined)
    .map(([p, short]) => `${short} ${upstreamVersion(versions[p]!)}`)
    .join(', ');
}

export function upstreamVersion(version: string): string {
  return version.replace(/^\d+:/, '').replace(/-[^-]*$/, '');
}

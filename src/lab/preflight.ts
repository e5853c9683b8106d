/**
 * What `lab up` needs from the machine, checked before anything is created. The facts come from an
 * injectable probe, so the message for a machine without root or tools is tested without one.
 */
import { accessSync, constants, existsSync, readFileSync } from 'node:fs';
import { release } from 'node:os';
import { delimiter, join } from 'node:path';
import { UsageError } from '../errors.js';
import type { Manager } from '../inventory/model.js';

export const INSTALL_HINT =
  'apt-get install openssh-server iproute2 iputils-ping util-linux ifupdown network-manager netplan.io networkd-dispatcher dbus mmdebstrap (or: sudo scripts/setup)';

/** Command → the Debian/Ubuntu package that ships it. */
export const LAB_TOOLS: Readonly<Record<string, string>> = {
  ip: 'iproute2',
  sshd: 'openssh-server',
  'ssh-keygen': 'openssh-client',
  ping: 'iputils-ping',
  unshare: 'util-linux',
  nsenter: 'util-linux',
  mount: 'mount',
  umount: 'mount',
};
/** What each manager's lab hosts run: the real manager, its dispatcher and a D-Bus of their own. */
export const MANAGER_TOOLS: Readonly<Record<Manager, Readonly<Record<string, string>>>> = {
  ifupdown: { ifup: 'ifupdown', ifdown: 'ifupdown', bash: 'bash' },
  networkmanager: {
    NetworkManager: 'network-manager',
    nmcli: 'network-manager',
    'nm-online': 'network-manager',
    'dbus-daemon': 'dbus',
    bash: 'bash',
  },
  netplan: {
    netplan: 'netplan.io',
    'systemd-networkd': 'systemd',
    networkctl: 'systemd',
    'dbus-send': 'dbus',
    'networkd-dispatcher': 'networkd-dispatcher',
    'dbus-daemon': 'dbus',
    bash: 'bash',
  },
};

export interface PreflightProbe {
  isRoot(): boolean;
  /** Absolute path of a command, or undefined when it is not installed. */
  findCommand(name: string): string | undefined;
  /** Whether the kernel can mount overlayfs (each host's /etc is an overlay). */
  hasOverlayfs(): boolean;
}

export interface PreflightNeeds {
  /** The managers whose real daemons the lab's hosts run (none for a lab without daemons). */
  readonly managers: readonly Manager[];
  /** Whether a host emulates systemd: the lab's systemctl is laid over the real one, which must be there. */
  readonly systemd?: boolean;
  /** Whether a suite's root must be built first (lab up --suite on a machine without it cached): mmdebstrap. */
  readonly rootBuilder?: boolean;
}

/** What hosts that emulate systemd need: the real systemctl, for the stand-in to lie over. */
export const SYSTEMD_TOOLS: Readonly<Record<string, string>> = { systemctl: 'systemd', bash: 'bash' };

/** What builds a suite's root (suites.ts): mmdebstrap, and flock for its lock. */
export const ROOT_BUILDER_TOOLS: Readonly<Record<string, string>> = { mmdebstrap: 'mmdebstrap', flock: 'util-linux' };

export interface LabTools {
  /** sshd must be started by absolute path (it re-executes itself). */
  readonly sshd: string;
}

/** Problems, each a sentence; empty when the machine can run a lab. */
export function preflightProblems(needs: PreflightNeeds, probe: PreflightProbe, command = 'lab up'): string[] {
  const problems: string[] = [];
  if (!probe.isRoot()) problems.push(rootProblem(command));
  const tools = Object.assign(
    {},
    LAB_TOOLS,
    ...needs.managers.map((m) => MANAGER_TOOLS[m]),
    needs.systemd ? SYSTEMD_TOOLS : {},
    needs.rootBuilder ? ROOT_BUILDER_TOOLS : {},
  ) as Record<string, string>;
  const missing = Object.entries(tools).filter(([cmd]) => probe.findCommand(cmd) === undefined);
  if (missing.length) {
    problems.push(
      `${command} needs ${missing.map(([cmd, pkg]) => `${cmd} (${pkg})`).join(', ')}, not found; install with: ${INSTALL_HINT}`,
    );
  }
  if (!probe.hasOverlayfs())
    problems.push(`${command} needs overlayfs in the kernel for each host's /etc (try: modprobe overlay)`);
  return problems;
}

function rootProblem(command: string): string {
  return `${command} needs root (it works with network namespaces and mounts): run it as root, e.g. sudo ibfleet ${command}`;
}

/** `lab down` and `lab reboot` need root, not the tools `lab up` checks for. */
export function requireRoot(command: string, isRoot: () => boolean = () => process.getuid?.() === 0): void {
  if (!isRoot()) throw new UsageError(rootProblem(command));
}

export function checkPreflight(
  needs: PreflightNeeds,
  probe: PreflightProbe = systemProbe(),
  command = 'lab up',
): LabTools {
  const problems = preflightProblems(needs, probe, command);
  if (problems.length) throw new UsageError(problems.join('\n'));
  return { sshd: probe.findCommand('sshd')! };
}

/** Root's usual PATH, searched after $PATH: sudo and cron often drop the sbin directories; systemd-networkd lives in /lib/systemd. */
const SYSTEM_PATH = [
  '/usr/local/sbin',
  '/usr/local/bin',
  '/usr/sbin',
  '/usr/bin',
  '/sbin',
  '/bin',
  '/lib/systemd',
  '/usr/lib/systemd',
];

export function systemProbe(env: Readonly<Record<string, string | undefined>> = process.env): PreflightProbe {
  const dirs = [...(env.PATH ?? '').split(delimiter).filter((d) => d.startsWith('/')), ...SYSTEM_PATH];
  return {
    isRoot: () => process.getuid?.() === 0,
    findCommand: (name) => {
      for (const dir of dirs) {
        const candidate = join(dir, name);
        try {
          accessSync(candidate, constants.X_OK);
          return candidate;
        } catch {
          // not here
        }
      }
      return undefined;
    },
    // Loaded, or a module the first overlay mount will load.
    hasOverlayfs: () => {
      try {
        if (/\toverlay$/m.test(readFileSync('/proc/filesystems', 'utf8'))) return true;
      } catch {
        // no /proc: fall through
      }
      return existsSync(`/lib/modules/${release()}/kernel/fs/overlayfs`);
    },
  };
}

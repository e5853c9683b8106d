/**
 * The reference tools, used only when installed (the benchmark installs nothing): pdsh, ClusterShell
 * and Ansible push each host's rendered routing script and run it once, at the same concurrency as
 * ibfleet. pdsh's ssh module does not forward stdin and neither tool can send per-host content
 * through its ssh worker, so both use their exec worker with `%h` — which runs exactly the
 * `ssh HOST sh -s < SCRIPT` their ssh worker would, one per host. Ansible copies the script and
 * runs it (copy + shell, gather_facts off, forks = concurrency, its default SSH multiplexing).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export const REFERENCE_TOOLS = ['pdsh', 'clush', 'ansible'] as const;
export type ReferenceTool = (typeof REFERENCE_TOOLS)[number];

const BINARIES: Record<ReferenceTool, string> = { pdsh: 'pdsh', clush: 'clush', ansible: 'ansible-playbook' };

export function findTool(tool: ReferenceTool): string | undefined {
  for (const dir of (process.env.PATH ?? '/usr/bin:/bin').split(':')) {
    const path = join(dir, BINARIES[tool]);
    if (dir && existsSync(path)) return path;
  }
  return undefined;
}

export function toolVersion(tool: ReferenceTool): string | undefined {
  const bin = findTool(tool);
  if (!bin) return undefined;
  const args = tool === 'pdsh' ? ['-V'] : ['--version'];
  try {
    const out = execFileSync(bin, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    return out.split('\n')[0]!.trim();
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string };
    return `${e.stdout ?? ''}${e.stderr ?? ''}`.split('\n')[0]!.trim() || 'unknown version';
  }
}

export interface ReferenceHost {
  readonly id: number;
  readonly address: string;
}

export interface ReferenceSetup {
  readonly dir: string;
  readonly sshConfig: string;
  readonly scriptsDir: string;
  readonly hostsFile: string;
  readonly ansibleConfig: string;
  readonly ansibleInventory: string;
  readonly ansiblePlaybook: string;
}

/** The OpenSSH client settings every reference tool uses: the lab key only, strict host keys against the lab's known_hosts. */
export function renderSshConfig(identityFile: string, knownHostsFile: string, user: string): string {
  return [
    'Host *',
    `  User ${user}`,
    `  IdentityFile ${identityFile}`,
    '  IdentitiesOnly yes',
    `  UserKnownHostsFile ${knownHostsFile}`,
    '  GlobalKnownHostsFile /dev/null',
    '  StrictHostKeyChecking yes',
    '  BatchMode yes',
    '  ConnectTimeout 30',
    '',
  ].join('\n');
}

export function renderAnsibleConfig(setupDir: string, sshConfig: string, forks: number): string {
  return [
    '[defaults]',
    'host_key_checking = True',
    `forks = ${forks}`,
    'gathering = explicit',
    'interpreter_python = /usr/bin/python3',
    'retry_files_enabled = False',
    'deprecation_warnings = False',
    `local_tmp = ${setupDir}/ansible-local`,
    '',
    '[ssh_connection]',
    // Ansible's own default arguments (compression, one multiplexed connection per host), plus the lab's client settings.
    `ssh_args = -C -o ControlMaster=auto -o ControlPersist=60s -F ${sshConfig}`,
    '',
  ].join('\n');
}

export function renderAnsiblePlaybook(): string {
  return [
    '- name: push and run the rendered ibfleet routing script',
    '  hosts: all',
    '  gather_facts: false',
    '  tasks:',
    '    - name: push',
    '      ansible.builtin.copy:',
    '        src: "scripts/{{ inventory_hostname }}.sh"',
    // A new name every round, so the copy really transfers instead of finding the file in place.
    '        dest: "/root/ibfleet-bench-{{ round }}.sh"',
    "        mode: '0700'",
    '    - name: run',
    '      ansible.builtin.shell: "sh /root/ibfleet-bench-{{ round }}.sh"',
    '',
  ].join('\n');
}

export async function prepareReferences(
  dir: string,
  hosts: readonly ReferenceHost[],
  scripts: ReadonlyMap<number, string>,
  ssh: { identityFile: string; knownHostsFile: string; user: string },
  forks: number,
): Promise<ReferenceSetup> {
  const scriptsDir = join(dir, 'scripts');
  await mkdir(scriptsDir, { recursive: true, mode: 0o700 });
  await mkdir(join(dir, 'ansible-local'), { recursive: true, mode: 0o700 });
  const setup: ReferenceSetup = {
    dir,
    sshConfig: join(dir, 'ssh_config'),
    scriptsDir,
    hostsFile: join(dir, 'hosts.txt'),
    ansibleConfig: join(dir, 'ansible.cfg'),
    ansibleInventory: join(dir, 'inventory.ini'),
    ansiblePlaybook: join(dir, 'site.yml'),
  };
  await writeFile(setup.sshConfig, renderSshConfig(ssh.identityFile, ssh.knownHostsFile, ssh.user), { mode: 0o600 });
  await writeFile(setup.hostsFile, hosts.map((h) => `${h.address}\n`).join(''));
  await writeFile(setup.ansibleConfig, renderAnsibleConfig(dir, setup.sshConfig, forks), { mode: 0o600 });
  await writeFile(
    setup.ansibleInventory,
    `[lab]\n${hosts.map((h) => `${h.address} ansible_user=${ssh.user}`).join('\n')}\n`,
  );
  await writeFile(setup.ansiblePlaybook, renderAnsiblePlaybook());
  await Promise.all(
    hosts.map((h) => writeFile(join(scriptsDir, `${h.address}.sh`), scripts.get(h.id)!, { mode: 0o600 })),
  );
  return setup;
}

/** Printed locally after each host's ssh exits, so per-host success can be counted from the tools' output. */
const RC_MARK = '@@bench-rc=';

function sshOnce(setup: ReferenceSetup): string {
  return `ssh -F ${setup.sshConfig} %h sh -s < ${setup.scriptsDir}/%h.sh; echo "${RC_MARK}$?"`;
}

export interface ReferenceCommand {
  readonly argv: string[];
  readonly env: NodeJS.ProcessEnv;
  /** Hosts the tool's output says succeeded. */
  hostsOk(stdout: string): number;
}

function markedOk(stdout: string): number {
  return new Set(
    stdout
      .split('\n')
      .filter((l) => l.endsWith(`: ${RC_MARK}0`))
      .map((l) => l.slice(0, l.indexOf(':'))),
  ).size;
}

export function referenceCommand(
  tool: ReferenceTool,
  setup: ReferenceSetup,
  hosts: readonly ReferenceHost[],
  concurrency: number,
  round: number,
  env: NodeJS.ProcessEnv,
): ReferenceCommand {
  switch (tool) {
    case 'pdsh':
      return {
        argv: [
          findTool('pdsh')!,
          '-R',
          'exec',
          '-f',
          String(concurrency),
          '-w',
          `^${setup.hostsFile}`,
          'sh',
          '-c',
          sshOnce(setup),
        ],
        env,
        hostsOk: markedOk,
      };
    case 'clush':
      return {
        argv: [
          findTool('clush')!,
          '-R',
          'exec',
          '-f',
          String(concurrency),
          '-w',
          hosts.map((h) => h.address).join(','),
          sshOnce(setup),
        ],
        env,
        hostsOk: markedOk,
      };
    case 'ansible':
      return {
        argv: [
          findTool('ansible')!,
          '-i',
          setup.ansibleInventory,
          setup.ansiblePlaybook,
          '-f',
          String(concurrency),
          '-e',
          `round=${round}`,
        ],
        env: {
          ...env,
          ANSIBLE_CONFIG: setup.ansibleConfig,
          ANSIBLE_SSH_CONTROL_PATH_DIR: join(setup.dir, `cp-${round}`),
          ANSIBLE_NOCOLOR: '1',
          ANSIBLE_FORCE_COLOR: '0',
        },
        hostsOk: (stdout) =>
          stdout
            .split('\n')
            .map((l) => /^(\S+)\s+:\s+ok=(\d+)\s+changed=\d+\s+unreachable=(\d+)\s+failed=(\d+)/.exec(l))
            .filter((m): m is RegExpExecArray => m !== null && m[2] === '2' && m[3] === '0' && m[4] === '0').length,
      };
  }
}

/**
 * Ansible leaves its multiplexing masters running for ControlPersist after the play; they belong to
 * this run (their command line names its control-path directory), so they are ended by pid — before
 * the hosts' CPU is read, so their sessions' cost counts in Ansible's row and not in the next one.
 */
export function stopControlMasters(controlPathDir: string): number {
  let stopped = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let cmdline: string;
    try {
      cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
    } catch {
      continue;
    }
    // A master retitles itself "ssh: <control path> [mux]"; before that its argv names the directory.
    if (!/^ssh[\0:]/.test(cmdline) || !cmdline.includes(controlPathDir)) continue;
    try {
      process.kill(Number(entry), 'SIGTERM');
      stopped++;
    } catch {
      // already gone
    }
  }
  return stopped;
}

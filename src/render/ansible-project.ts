/**
 * `ibfleet export ansible`: an Ansible project that does what `ibfleet deploy` does, for sites whose
 * fleet runs through Ansible or AWX. It hands over what ibfleet renders — each host's exact files,
 * under files/<host>/ — and a role that installs them and runs ibfleet's own routing script: its
 * --preflight (can the host take the routing at all?), its --check (what differs), the script
 * itself, and its --check again as the verification. Nothing of the routing is decided in Jinja:
 * the role copies, runs and reports. The same inventory and playbook give byte-identical projects.
 *
 * Layout: ansible.cfg, inventory.yml (the SSH targets ibfleet resolved), host_vars/<host>.yml (its
 * NICs, tables, manager, files), site.yml, files/<host>/<path>, and the role as collection
 * ibfleet.routing under collections/ansible_collections (found next to the playbook, and
 * installable by AWX from collections/requirements.yml). What is the same for every export (the
 * role, its lock programs, the collection, the playbook) is the repository's host/ansible/ tree,
 * read once; what TypeScript writes is data: the inventory, host_vars and each host's files.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Document, visit } from 'yaml';
import { BugError } from '../errors.js';
import type { Fleet, Host, Manager } from '../inventory/model.js';
import type { Playbook } from '../playbook/playbook.js';
import { PACKAGE_ROOT } from '../package-root.js';
import { withHostFunctions } from '../script/host-functions.js';
import type { RenderedFile } from '../script/rendered-file.js';
import { formatMode } from '../script/rendered-file.js';
import { OWNED_PATHS, STEPS } from '../steps/registry.js';
import { VERSION } from '../version.js';
import { directoriesFor } from './write-files.js';
import { previewPersistence, renderContext, renderHostFiles } from './host-files.js';

/** How to reach a host, as ibfleet resolved it (inventory, ~/.ssh/config, defaults). */
export interface AnsibleTarget {
  readonly address: string;
  readonly port: number;
  readonly user: string;
  readonly become: boolean;
  /** The identity the inventory names; unset: ssh's own configuration decides. */
  readonly identityFile?: string | undefined;
  readonly identitiesOnly: boolean;
  /** ProxyJump hops, outermost first, as `user@host:port`. */
  readonly jumps: readonly string[];
}

export interface AnsibleHost {
  readonly host: Host;
  /** The manager the host's files are for: the inventory's, or the one its probe showed. */
  readonly manager: Manager;
  readonly target: AnsibleTarget;
}

export interface AnsibleExport {
  readonly fleet: Fleet;
  readonly playbook: Playbook;
  readonly hosts: readonly AnsibleHost[];
  readonly ssh: {
    /** A known_hosts file other than ssh's default. */
    readonly knownHosts?: string | undefined;
    /** An ssh config other than ssh's default. */
    readonly config?: string | undefined;
    /** --accept-new: record unknown host keys; otherwise unknown keys are refused, as ibfleet refuses them. */
    readonly acceptNew: boolean;
  };
}

/** One file of the project: its path below the project directory, content and mode. */
export interface ProjectFile {
  readonly relative: string;
  readonly content: string;
  readonly mode: number;
}

export const COLLECTION_DIR = 'collections/ansible_collections/ibfleet/routing';

/** What the project holds at its top, and how an earlier export is known (its ansible.cfg): `--out` writes only into a new, empty or earlier export's directory. */
export const PROJECT_TREE = {
  entries: {
    'README.md': 'file',
    'ansible.cfg': 'file',
    'inventory.yml': 'file',
    'site.yml': 'file',
    collections: 'directory',
    host_vars: 'directory',
    files: 'directory',
  },
  mark: { relative: 'ansible.cfg', begins: '# Written by ibfleet ' },
} as const;
export const ROLE_NAME = 'ibfleet.routing.routing';

/**
 * Ansible templates every string of an inventory and host_vars on the controller, `--check` too: an
 * inventory value with `{{ lookup('pipe', ...) }}` in it would run there. Each string ibfleet writes
 * is data, so each is tagged `!unsafe` (never templated); numbers and booleans carry no template.
 */
const yaml = (value: unknown, comment: string): string => {
  const doc = new Document(value);
  visit(doc, {
    Scalar(key, node) {
      if (key !== 'key' && typeof node.value === 'string') node.tag = '!unsafe';
    },
  });
  doc.commentBefore = comment;
  return doc.toString({ lineWidth: 0 });
};

const header = (what: string) =>
  ` ${what}\n Written by ibfleet ${VERSION} export ansible; export again after changing the inventory or playbook.`;

/** OpenSSH options for every host: the known_hosts and config ibfleet uses, and its host-key policy. */
function sshArgs(project: AnsibleExport, target: AnsibleTarget): string {
  const args = [
    ...(project.ssh.config ? ['-F', project.ssh.config] : []),
    '-o',
    `StrictHostKeyChecking=${project.ssh.acceptNew ? 'accept-new' : 'yes'}`,
    ...(project.ssh.knownHosts ? ['-o', `UserKnownHostsFile=${project.ssh.knownHosts}`] : []),
    ...(target.identitiesOnly ? ['-o', 'IdentitiesOnly=yes'] : []),
    ...(target.jumps.length ? ['-o', `ProxyJump=${target.jumps.join(',')}`] : []),
  ];
  // ansible splits this with shlex: a word with a blank is quoted.
  return args.map((a) => (/[\s'"\\]/.test(a) ? `'${a.replace(/'/g, `'"'"'`)}'` : a)).join(' ');
}

function inventory(project: AnsibleExport): string {
  const hosts = Object.fromEntries(
    project.hosts.map(({ host, target }) => [
      host.name,
      {
        ansible_host: target.address,
        ansible_port: target.port,
        ansible_user: target.user,
        ansible_become: target.become,
        ...(target.identityFile ? { ansible_ssh_private_key_file: target.identityFile } : {}),
        ansible_ssh_common_args: sshArgs(project, target),
      },
    ]),
  );
  return yaml(
    { all: { children: { ibfleet: { hosts } } } },
    header(
      `The hosts of ${project.fleet.hosts.length === project.hosts.length ? 'the inventory' : 'the selection'}, as ibfleet reaches them over SSH (sudo as become).`,
    ),
  );
}

/** ibfleet's files a deploy decides on each host from its probe (links', the route watcher): the role never writes or removes them. */
const DECIDED_ON_HOST: readonly string[] = STEPS.flatMap((s) =>
  (s.paths ?? []).filter((p) => s.decidedOnHost || p.decidedOnHost).map((p) => p.path),
);

/** The steps' programs the role runs before the routing (links': its NICs, decided on the host), with the host functions they call; empty: none. */
function linksProgram(project: AnsibleExport, { host, manager }: AnsibleHost): string {
  const programs = project.playbook.steps.flatMap(
    ({ step }) => step.exportProgram?.(host, manager, project.playbook.name) ?? [],
  );
  if (programs.length > 1) throw new BugError('export ansible: one step may bring a program of its own, links');
  return programs.length ? withHostFunctions(programs[0]!) : '';
}

/** The files a host gets, what of ibfleet's it must not have, and what systemd is told after. */
function hostVars(project: AnsibleExport, entry: AnsibleHost, files: readonly RenderedFile[]): string {
  const { host, manager } = entry;
  const written = files.map((f) => f.path);
  const after = (paths: readonly string[]) => {
    const lines = project.playbook.persister.afterFiles(paths, []);
    // The functions those lines call come with them (script/host-functions.ts).
    return lines.length ? ['status=0', withHostFunctions(lines.join('\n')), 'exit "$status"', ''].join('\n') : '';
  };
  const vars = {
    ibfleet_host: host.id,
    ibfleet_manager: manager,
    ibfleet_playbook: project.playbook.name,
    ibfleet_nics: host.nics.map((n) => ({
      nic: n.index,
      iface: n.iface,
      address: `${n.address}/${n.prefixLength}`,
      table: n.table,
      priority: n.priority,
    })),
    ibfleet_directories: directoriesFor(files).filter((d) => d !== '/etc'),
    ibfleet_files: files.map((f) => ({ path: f.path, mode: formatMode(f.mode) })),
    ibfleet_absent: [
      ...OWNED_PATHS.filter((p) => !written.includes(p) && !DECIDED_ON_HOST.includes(p)),
      ...project.playbook.persister.unwantedFiles(),
    ],
    ibfleet_after_files_changed: after(written),
    ibfleet_after_files_unchanged: after([]),
    ibfleet_links_program: linksProgram(project, entry),
  };
  return yaml(
    vars,
    header(
      `Host ${host.id} (${host.name}): its NICs, tables and manager, and ibfleet's files for it (under files/${host.name}/).`,
    ),
  );
}

/**
 * The project's files that are the same for every export but for the words @NAME@ stands for: the
 * repository's host/ansible/ tree (the role's tasks and its lock programs ibfleet-lock and
 * ibfleet-unlock, the collection, the playbook), read once, each directory's files before its
 * subdirectories. A program of the tree (its execute bit) stays one in the project.
 */
const TREE = join(PACKAGE_ROOT, 'host', 'ansible');
function treeFiles(relative: string): { relative: string; text: string; mode: number }[] {
  const entries = readdirSync(join(TREE, relative), { withFileTypes: true }).sort((a, b) =>
    a.name.localeCompare(b.name, 'en'),
  );
  const path = (name: string) => (relative ? `${relative}/${name}` : name);
  return [
    ...entries
      .filter((e) => e.isFile())
      .map((e) => {
        const file = join(TREE, path(e.name));
        return {
          relative: path(e.name),
          text: readFileSync(file, 'utf8'),
          mode: statSync(file).mode & 0o111 ? 0o755 : 0o644,
        };
      }),
    ...entries.filter((e) => e.isDirectory()).flatMap((e) => treeFiles(path(e.name))),
  ];
}
const TREE_FILES = treeFiles('');

/** A file of the tree with its words filled in: an @NAME@ the export does not know is a defect. */
function fromTree(relative: string, text: string, words: Readonly<Record<string, string>>): string {
  return text.replace(/@([A-Z_]+)@/g, (_, name: string) => {
    const word = words[name];
    if (word === undefined) throw new BugError(`host/ansible/${relative}: no word for @${name}@`);
    return word;
  });
}

/** Every file of the project, in a stable order. */
export function renderAnsibleProject(project: AnsibleExport): ProjectFile[] {
  const out: ProjectFile[] = [];
  const add = (relative: string, content: string, mode = 0o644) => out.push({ relative, content, mode });
  const words = {
    IBFLEET_VERSION: VERSION,
    PLAYBOOK: project.playbook.name,
    HOSTS: project.hosts.map((h) => h.host.name).join(', '),
  };
  for (const { relative, text, mode } of TREE_FILES) {
    add(relative, fromTree(relative, text, words), mode);
    if (relative === 'ansible.cfg') add('inventory.yml', inventory(project));
  }
  for (const entry of project.hosts) {
    const files = renderHostFiles(
      project.playbook,
      renderContext(project.playbook, entry.host, project.fleet, entry.manager),
    );
    add(`host_vars/${entry.host.name}.yml`, hostVars(project, entry, files));
    for (const f of files) add(`files/${entry.host.name}${f.path}`, f.content, f.mode);
  }
  return out;
}

/**
 * Why a playbook cannot be exported: a step asked for what deploy decides from each host's probe
 * (links' mode, MTU, partition), or persistence in the manager's configuration, which needs it too.
 */
export function exportRefusal(
  playbook: Playbook,
  hosts: readonly Pick<AnsibleHost, 'host' | 'manager'>[],
): string | undefined {
  for (const { step } of playbook.steps) {
    for (const { host } of hosts) {
      const why = step.exportRefusal?.(host);
      if (why) return `playbook ${playbook.name}: ${why}`;
    }
  }
  const native = hosts.find((h) => previewPersistence(playbook, h.manager).kind !== 'script');
  if (!native) return undefined;
  return `playbook ${playbook.name} persists in the network manager's own configuration on ${native.host.name} (${native.manager}), which deploy sets from what it finds on each host (its connection profiles, its netplan devices): an exported project cannot know that. Export the hook playbook (the default), or deploy this one with ibfleet deploy`;
}

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
 * installable by AWX from collections/requirements.yml). Pure.
 */
import { Document, visit } from 'yaml';
import type { Fleet, Host, Manager } from '../inventory/model.js';
import type { Playbook } from '../playbook/playbook.js';
import { ROUTING_SCRIPT_PATH } from '../script/paths.js';
import type { RenderedFile } from '../script/rendered-file.js';
import { formatMode } from '../script/rendered-file.js';
import { OWNED_PATHS, STEPS } from '../steps/registry.js';
import { VERSION } from '../version.js';
import { directoriesFor } from './apply-script.js';
import { ROLE_DEFAULTS, ROLE_META, ROLE_TASKS } from './ansible-role.js';
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

/** ibfleet's files a deploy decides on each host from its probe (links'): the role never writes or removes them. */
const DECIDED_ON_HOST: readonly string[] = STEPS.filter((s) => s.decidedOnHost).flatMap((s) =>
  (s.paths ?? []).map((p) => p.path),
);

/** The files a host gets, what of ibfleet's it must not have, and what systemd is told after. */
function hostVars(project: AnsibleExport, entry: AnsibleHost, files: readonly RenderedFile[]): string {
  const { host, manager } = entry;
  const written = files.map((f) => f.path);
  const after = (paths: readonly string[]) => {
    const lines = project.playbook.steps.flatMap((s) => s.step.afterFiles?.(paths, []) ?? []);
    return lines.length ? ['status=0', ...lines, 'exit "$status"', ''].join('\n') : '';
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
      ...project.playbook.steps.flatMap((s) => s.step.unwantedFiles?.() ?? []),
    ],
    ibfleet_after_files_changed: after(written),
    ibfleet_after_files_unchanged: after([]),
  };
  return yaml(
    vars,
    header(
      `Host ${host.id} (${host.name}): its NICs, tables and manager, and ibfleet's files for it (under files/${host.name}/).`,
    ),
  );
}

const SITE = (
  playbook: string,
) => `# What \`ibfleet deploy\` does, for Ansible and AWX: ibfleet's files for each host, its routing script
# run, and the host verified as ibfleet verifies it (playbook ${playbook}).
# Written by ibfleet ${VERSION} export ansible.
#   ansible-playbook -i inventory.yml site.yml               deploy
#   ansible-playbook -i inventory.yml site.yml --check --diff   what would change; changes nothing
- name: Per-NIC policy routing for InfiniBand NICs in one subnet (ibfleet)
  hosts: ibfleet
  gather_facts: false
  roles:
    - role: ${ROLE_NAME}
`;

const CFG = `# Written by ibfleet ${VERSION} export ansible.
[defaults]
inventory = inventory.yml
collections_paths = ./collections
retry_files_enabled = False
interpreter_python = auto_silent

[ssh_connection]
pipelining = True
`;

const REQUIREMENTS = `# For AWX (and ansible-galaxy collection install -r collections/requirements.yml): the role lives
# in this project, as collection ibfleet.routing. ansible-playbook also finds it next to site.yml.
collections:
  - name: ibfleet.routing
    type: dir
    source: ./${COLLECTION_DIR}
`;

const GALAXY = `# Written by ibfleet ${VERSION} export ansible.
namespace: ibfleet
name: routing
version: ${VERSION}
readme: README.md
authors:
  - ibfleet
description: Installs ibfleet's rendered per-NIC policy routing files and runs ibfleet's routing script (apply and verification).
license:
  - MIT
tags:
  - networking
  - infiniband
build_ignore: []
`;

const COLLECTION_README = `# ibfleet.routing

Written by \`ibfleet export ansible\` (ibfleet ${VERSION}). Role \`ibfleet.routing.routing\` installs
the files ibfleet rendered for each host (\`files/<host>/\` next to the playbook, listed in the
host's \`ibfleet_files\`) and runs ibfleet's routing script, ${ROUTING_SCRIPT_PATH}:

0. The host lock \`ibfleet deploy\` takes, for the whole run (a deploy or rollback under way is
   waited for; one that comes meanwhile waits for the role).
1. \`--preflight\`: every fabric NIC there, up, with its address; otherwise the host fails with
   ibfleet's reasons and nothing is changed on it (as \`ibfleet deploy\` refuses it at plan).
2. \`--snapshot\`: what the change may touch (rules, tables, routes, sysctls, the files), as a
   script that puts it back.
3. The files, with \`copy\` (\`--check\` and \`--diff\` show them); files of ibfleet's this host must
   not have (another manager's hook) removed.
4. \`--check\` with the rendered script: what differs from the deployed state, one line per reason
   (printed; in check mode the task reports \`changed\`).
5. The routing script, when something differs; systemd told about changed repair units.
6. \`--check\` again: a host that is not as deployed is put back as it was (the snapshot) and fails
   with ibfleet's reasons, as \`ibfleet deploy\` restores a host that fails verification.

Nothing of the routing is decided in the role: the host's files are ibfleet's, byte for byte.
`;

function projectReadme(project: AnsibleExport): string {
  return `# ibfleet export ansible

Written by ibfleet ${VERSION} for ${project.hosts.map((h) => h.host.name).join(', ')} (playbook ${project.playbook.name}).

    ansible-playbook -i inventory.yml site.yml                  # deploy, as ibfleet deploy does
    ansible-playbook -i inventory.yml site.yml --check --diff   # what would change; changes nothing

AWX: use this directory as a project; collections/requirements.yml installs the role (collection
ibfleet.routing), site.yml is the playbook, inventory.yml the inventory. \`ibfleet status\` reads the
hosts as it reads hosts \`ibfleet deploy\` deployed. Export again after changing the inventory or
the playbook: the files under files/ are ibfleet's rendering for each host.
`;
}

/** Every file of the project, in a stable order. */
export function renderAnsibleProject(project: AnsibleExport): ProjectFile[] {
  const out: ProjectFile[] = [];
  const add = (relative: string, content: string, mode = 0o644) => out.push({ relative, content, mode });
  add('README.md', projectReadme(project));
  add('ansible.cfg', CFG);
  add('inventory.yml', inventory(project));
  add('site.yml', SITE(project.playbook.name));
  add('collections/requirements.yml', REQUIREMENTS);
  add(`${COLLECTION_DIR}/galaxy.yml`, GALAXY);
  add(`${COLLECTION_DIR}/README.md`, COLLECTION_README);
  add(`${COLLECTION_DIR}/meta/runtime.yml`, "requires_ansible: '>=2.14'\n");
  add(`${COLLECTION_DIR}/roles/routing/tasks/main.yml`, ROLE_TASKS);
  add(`${COLLECTION_DIR}/roles/routing/defaults/main.yml`, ROLE_DEFAULTS);
  add(`${COLLECTION_DIR}/roles/routing/meta/main.yml`, ROLE_META);
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

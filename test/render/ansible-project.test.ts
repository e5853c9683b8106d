/**
 * `ibfleet export ansible`'s project, from its pure renderer: golden files for what is not ibfleet's
 * rendering of a host (inventory, host_vars, playbook, the role in its collection), the host files
 * byte for byte as `ibfleet render` gives them, and the real ansible-core reading it — the playbook
 * parses, the role resolves from the collection next to it, and AWX's way in (ansible-galaxy from
 * collections/requirements.yml) installs it. It runs against the lab in test/e2e/fit.test.ts.
 *
 *   UPDATE_GOLDEN=1 npx vitest run test/render/ansible-project.test.ts && git diff test/golden/ansible
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { isScalar, parse as parseYaml, parseDocument, visit } from 'yaml';
import {
  renderAnsibleProject,
  exportRefusal,
  COLLECTION_DIR,
  PROJECT_TREE,
  type AnsibleExport,
} from '../../src/render/ansible-project.js';
import { LOCKED_EXIT } from '../../src/render/host-lock.js';
import { PACKAGE_ROOT } from '../../src/package-root.js';
import { LOCK_DIR, LOCK_PATH, ROUTES_DATA_PATH, ROUTING_SCRIPT_PATH } from '../../src/script/paths.js';
import { expectShellcheckClean } from '../helpers/tools.js';
import { loadPlaybook } from '../../src/playbook/playbook.js';
import { shellQuote } from '../../src/script/shell.js';
import { bareNic } from '../../src/steps/links/decide.js';
import { renderLinksNetplan } from '../../src/steps/links/netplan.js';
import { addCommand, keyfilePath, keyfileText } from '../../src/steps/links/networkmanager.js';
import { filesOf, hostOf, loadFixtureFleet, loadFixturePlaybook } from '../fixtures/fixtures.js';

const UPDATE = process.env.UPDATE_GOLDEN === '1';
/** Ansible's `!unsafe` strings read as the strings they are. */
const parse = (text: string): unknown =>
  parseYaml(text, { customTags: [{ tag: '!unsafe', resolve: (s: string) => s }] });
const seeds = loadFixtureFleet('seeds.yaml');
const playbook = loadFixturePlaybook();
const target = (address: string) => ({
  address,
  port: 22,
  user: 'root',
  become: false,
  identitiesOnly: false,
  jumps: [],
});
const project: AnsibleExport = {
  fleet: seeds,
  playbook,
  hosts: [
    {
      host: hostOf(seeds, 16),
      manager: 'networkmanager',
      target: { ...target('10.208.130.16'), user: 'ops', become: true, jumps: ['admin@bastion:2222'] },
    },
    {
      host: hostOf(seeds, 34),
      manager: 'netplan',
      target: { ...target('10.208.130.34'), identityFile: '/home/ops/.ssh/fabric key', identitiesOnly: true },
    },
  ],
  ssh: { knownHosts: '/etc/ibfleet/known_hosts', acceptNew: false },
};
const files = renderAnsibleProject(project);
const byPath = new Map(files.map((f) => [f.relative, f]));

const work = mkdtempSync(join(tmpdir(), 'ibfleet-ansible-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

function writeProject(dir: string): void {
  for (const f of files) {
    mkdirSync(dirname(join(dir, f.relative)), { recursive: true });
    writeFileSync(join(dir, f.relative), f.content);
    chmodSync(join(dir, f.relative), f.mode);
  }
}

function expectGolden(rendered: string, name: string): void {
  const path = fileURLToPath(new URL(`../golden/ansible/${name}`, import.meta.url));
  if (UPDATE) {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, rendered);
    return;
  }
  if (!existsSync(path)) throw new Error(`test/golden/ansible/${name} does not exist; create it with UPDATE_GOLDEN=1`);
  expect(rendered).toBe(readFileSync(path, 'utf8'));
}

describe('the project export ansible writes', () => {
  // The role's programs are the repository's files themselves (checked below), not a rendering.
  const ROLE_PROGRAMS = /^collections\/.*\/roles\/routing\/files\//;
  it.each(
    files
      .filter((f) => !f.relative.startsWith('files/') && !ROLE_PROGRAMS.test(f.relative))
      .map((f) => [f.relative] as const),
  )('%s is as reviewed (golden)', (relative) => {
    expectGolden(byPath.get(relative)!.content, relative);
  });

  it.each(['ibfleet-lock', 'ibfleet-unlock'])(
    "the role's %s is host/ansible's file byte for byte, executable, and clean under shellcheck",
    (name) => {
      const relative = `${COLLECTION_DIR}/roles/routing/files/${name}`;
      const source = join(PACKAGE_ROOT, 'host', 'ansible', relative);
      expect(byPath.get(relative)).toEqual({ relative, content: readFileSync(source, 'utf8'), mode: 0o755 });
      expectShellcheckClean(source);
    },
  );

  it("the role names the paths, lock and exit status deploy's own code uses (the tree's words are literal)", () => {
    const tasks = byPath.get(`${COLLECTION_DIR}/roles/routing/tasks/main.yml`)!.content;
    const lock = byPath.get(`${COLLECTION_DIR}/roles/routing/files/ibfleet-lock`)!.content;
    expect(tasks).toContain(`argv: ["${ROUTING_SCRIPT_PATH}", --check]`);
    expect(tasks).toContain(`ibfleet_files_dir ~ '${ROUTES_DATA_PATH}'`);
    expect(tasks).not.toMatch(/@[A-Z_]+@/);
    expect(lock).toContain(`exec 9>>${LOCK_PATH} || exit 70`);
    expect(lock).toContain(`exit ${LOCKED_EXIT}\n`);
    expect(lock).toContain(`[ -d ${LOCK_DIR} ] || mkdir -m 0700 ${LOCK_DIR}`);
  });

  it("each host's files are ibfleet's rendering of them, byte for byte and with their modes", () => {
    for (const { host, manager } of project.hosts) {
      const rendered = filesOf(host, seeds, playbook, manager);
      expect(
        files.filter((f) => f.relative.startsWith(`files/${host.name}/`)).map((f) => [f.relative, f.content, f.mode]),
      ).toEqual(rendered.map((f) => [`files/${host.name}${f.path}`, f.content, f.mode]));
      const vars = parse(byPath.get(`host_vars/${host.name}.yml`)!.content) as {
        ibfleet_files: { path: string; mode: string }[];
        ibfleet_manager: string;
      };
      expect(vars.ibfleet_files).toEqual(
        rendered.map((f) => ({ path: f.path, mode: f.mode.toString(8).padStart(4, '0') })),
      );
      expect(vars.ibfleet_manager).toBe(manager);
    }
  });

  it('the inventory holds the SSH targets as resolved: address, port, user, sudo as become, key, known_hosts, jump host', () => {
    const inventory = parse(byPath.get('inventory.yml')!.content) as {
      all: { children: { ibfleet: { hosts: Record<string, Record<string, unknown>> } } };
    };
    expect(inventory.all.children.ibfleet.hosts).toEqual({
      cpuserver16: {
        ansible_host: '10.208.130.16',
        ansible_port: 22,
        ansible_user: 'ops',
        ansible_become: true,
        ansible_ssh_common_args:
          '-o StrictHostKeyChecking=yes -o UserKnownHostsFile=/etc/ibfleet/known_hosts -o ProxyJump=admin@bastion:2222',
      },
      memserver34: {
        ansible_host: '10.208.130.34',
        ansible_port: 22,
        ansible_user: 'root',
        ansible_become: false,
        ansible_ssh_private_key_file: '/home/ops/.ssh/fabric key',
        ansible_ssh_common_args:
          '-o StrictHostKeyChecking=yes -o UserKnownHostsFile=/etc/ibfleet/known_hosts -o IdentitiesOnly=yes',
      },
    });
  });

  it('every string of the inventory and host_vars is !unsafe to Ansible (data: a {{ }} in an inventory value is never templated on the controller)', () => {
    const hostile = renderAnsibleProject({
      ...project,
      hosts: [
        {
          ...project.hosts[1]!,
          target: { ...project.hosts[1]!.target, identityFile: "keys/k{{ lookup('pipe','touch PWNED') }}" },
        },
      ],
      ssh: { ...project.ssh, knownHosts: '{% raw %}kh{{ x }}' },
    });
    const vars = hostile.filter((f) => f.relative === 'inventory.yml' || f.relative.startsWith('host_vars/'));
    expect(vars).toHaveLength(2);
    for (const f of vars) {
      const strings: { value: string; tag: string | undefined }[] = [];
      visit(parseDocument(f.content, { customTags: [{ tag: '!unsafe', resolve: (s: string) => s }] }), {
        Scalar: (key, node) =>
          void (
            key !== 'key' &&
            isScalar(node) &&
            typeof node.value === 'string' &&
            strings.push({ value: node.value, tag: node.tag })
          ),
      });
      expect(strings.length, f.relative).toBeGreaterThan(3);
      expect(
        strings.filter((s) => s.tag !== '!unsafe'),
        f.relative,
      ).toEqual([]);
    }
    expect(vars[0]!.content).toContain(
      "ansible_ssh_private_key_file: !unsafe keys/k{{ lookup('pipe','touch PWNED') }}\n",
    );
  });

  it('PROJECT_TREE names exactly what the project holds at its top, each of its kind (--out replaces only such a directory)', () => {
    const tops = Object.fromEntries(
      files.map((f) => {
        const [top, ...rest] = f.relative.split('/');
        return [top!, rest.length ? 'directory' : 'file'];
      }),
    );
    expect(tops).toEqual(PROJECT_TREE.entries);
    expect(byPath.get(PROJECT_TREE.mark.relative)!.content.startsWith(PROJECT_TREE.mark.begins)).toBe(true);
  });

  it('is pure: the same input gives the same bytes', () => {
    expect(renderAnsibleProject(project)).toEqual(files);
  });

  it("a playbook that persists in the manager's configuration is refused, naming the host", () => {
    const native = loadPlaybook(
      readFileSync(new URL('../../playbooks/dual-ib-routing-native.yaml', import.meta.url), 'utf8'),
      'dual-ib-routing-native.yaml',
    );
    expect(exportRefusal(native, project.hosts)).toMatch(
      /^playbook dual-ib-routing-native persists in the network manager's own configuration on cpuserver16 \(networkmanager\)/,
    );
    expect(exportRefusal(native, [{ host: hostOf(seeds, 34), manager: 'ifupdown' }])).toBeUndefined();
    expect(exportRefusal(playbook, project.hosts)).toBeUndefined();
  });

  it("links' files are never in a host's ibfleet_absent: the role leaves what links wrote as deploy wrote it", () => {
    for (const { host } of project.hosts) {
      const vars = parse(byPath.get(`host_vars/${host.name}.yml`)!.content) as { ibfleet_absent: string[] };
      expect(vars.ibfleet_absent.length).toBeGreaterThan(0);
      expect(
        vars.ibfleet_absent.filter((p) =>
          [
            '/etc/netplan/50-ibfleet-links.yaml',
            '/etc/network/interfaces.d/ibfleet-links',
            '/etc/ibfleet/links',
          ].includes(p),
        ),
      ).toEqual([]);
    }
  });

  it("each host's links program gives a bare NIC what deploy gives it: ibfleet's profile by nmcli or keyfile, its netplan file", () => {
    const program = (name: string) =>
      (parse(byPath.get(`host_vars/${name}.yml`)!.content) as { ibfleet_links_program: string }).ibfleet_links_program;
    const nm = program('cpuserver16');
    const host16 = hostOf(seeds, 16);
    const bare = (host: typeof host16, manager: 'networkmanager' | 'netplan', ipoib: boolean) =>
      host.nics.map((nic) => bareNic(host, manager, nic, {}, ipoib));
    for (const ipoib of [true, false])
      for (const m of bare(host16, 'networkmanager', ipoib)) {
        expect(nm).toContain(addCommand(m));
        expect(nm).toContain(`new_keyfile ${shellQuote(keyfilePath(m))} ${shellQuote(keyfileText(m))}`);
        expect(nm).toContain(`nic ${m.nic.iface} networkmanager ${m.profile!.uuid} created`);
      }
    const host34 = hostOf(seeds, 34);
    const netplan = program('memserver34');
    expect(netplan).toContain(shellQuote(renderLinksNetplan(host34, playbook.name, bare(host34, 'netplan', false))));
    // The functions it calls come with it, and only those: sh -c runs it alone.
    for (const text of [nm, netplan]) {
      expect(text).toMatch(/^lx_nic\(\) \{$/m);
      expect(text).toMatch(/^tell\(\) \{$/m);
      expect(text).not.toMatch(/^links_sys\(\) \{$/m);
    }
    expect(netplan).not.toMatch(/^lx_in_the_way_networkmanager\(\) \{$/m);
  });

  it('a playbook without links gives the role no links program', () => {
    const text = readFileSync(new URL('../../playbooks/dual-ib-routing.yaml', import.meta.url), 'utf8').replace(
      /^ {2}- links\n/m,
      '',
    );
    const without = loadPlaybook(text, 'without-links.yaml');
    expect(without.steps.map((s) => s.step.name)).not.toContain('links');
    const rendered = renderAnsibleProject({ ...project, playbook: without });
    const vars = parse(rendered.find((f) => f.relative === 'host_vars/memserver34.yml')!.content) as Record<
      string,
      unknown
    >;
    expect(vars['ibfleet_links_program']).toBe('');
  });

  it("the route watcher is never in a host's ibfleet_absent: removing its file would leave it running, program gone", () => {
    for (const { host } of project.hosts) {
      const vars = parse(byPath.get(`host_vars/${host.name}.yml`)!.content) as { ibfleet_absent: string[] };
      expect(vars.ibfleet_absent).not.toContain('/etc/ibfleet/ibfleet-routes-watch');
    }
  });

  it.each([
    [
      'the playbook asks links for an MTU',
      '  - links: { mtu: 2044 }',
      undefined,
      'step links asks cpuserver16 for mtu 2044',
    ],
    [
      'the playbook asks links for connected mode',
      '  - links: { mode: connected }',
      undefined,
      'step links asks cpuserver16 for mode connected',
    ],
    [
      "one host's links: asks for a partition",
      '  - links',
      { pkey: '0x8002' },
      'step links asks memserver34 for pkey 0x8002',
    ],
  ] as const)(
    'a playbook whose links asks what deploy decides from the probe is refused: %s',
    (_, step, override, says) => {
      const text = readFileSync(new URL('../../playbooks/dual-ib-routing.yaml', import.meta.url), 'utf8').replace(
        /^ {2}- links$/m,
        step,
      );
      const asked = loadPlaybook(text, 'asked.yaml');
      const hosts = project.hosts.map((h) =>
        override && h.host.id === 34 ? { ...h, host: { ...h.host, overrides: { links: override } } } : h,
      );
      expect(exportRefusal(asked, hosts)).toContain(
        `playbook dual-ib-routing: ${says} (the playbook's or the inventory's links:)`,
      );
    },
  );
});

const ANSIBLE = spawnSync('ansible-playbook', ['--version'], { encoding: 'utf8' }).status === 0;
if (!ANSIBLE)
  console.warn(
    'test/render/ansible-project.test.ts: ansible-core is not installed (scripts/setup installs it): its checks are skipped',
  );

describe.runIf(ANSIBLE)('ansible-core reads it', () => {
  it('ansible-playbook --syntax-check passes, the role found in the collection next to the playbook', () => {
    const dir = join(work, 'syntax');
    writeProject(dir);
    const result = spawnSync('ansible-playbook', ['-i', 'inventory.yml', 'site.yml', '--syntax-check'], {
      cwd: dir,
      encoding: 'utf8',
      env: { ...process.env, ANSIBLE_NOCOLOR: '1' },
    });
    expect(result.status, result.stdout + result.stderr).toBe(0);
    expect(result.stdout + result.stderr).not.toMatch(/WARNING/);
  });

  it('ansible-inventory lists both hosts in group ibfleet with their host_vars', () => {
    const dir = join(work, 'inventory');
    writeProject(dir);
    const result = spawnSync('ansible-inventory', ['-i', 'inventory.yml', '--host', 'memserver34'], {
      cwd: dir,
      encoding: 'utf8',
    });
    expect(result.status, result.stderr).toBe(0);
    // Every string is Ansible's unsafe text: data, never templated.
    expect(JSON.parse(result.stdout)).toMatchObject({
      ibfleet_host: 34,
      ibfleet_manager: { __ansible_unsafe: 'netplan' },
      ansible_host: { __ansible_unsafe: '10.208.130.34' },
    });
  });

  it("AWX's way in: ansible-galaxy installs collection ibfleet.routing from collections/requirements.yml", () => {
    const dir = join(work, 'galaxy');
    writeProject(dir);
    const into = join(work, 'installed');
    const result = spawnSync(
      'ansible-galaxy',
      ['collection', 'install', '-r', 'collections/requirements.yml', '-p', into],
      { cwd: dir, encoding: 'utf8', env: { ...process.env, ANSIBLE_NOCOLOR: '1' } },
    );
    expect(result.status, result.stdout + result.stderr).toBe(0);
    expect(readFileSync(join(into, 'ansible_collections/ibfleet/routing/roles/routing/tasks/main.yml'), 'utf8')).toBe(
      byPath.get('collections/ansible_collections/ibfleet/routing/roles/routing/tasks/main.yml')!.content,
    );
  });
});

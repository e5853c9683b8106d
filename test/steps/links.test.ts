/**
 * The links step, decided from real probe transcripts of the lab's fresh hosts — a netplan server
 * (60, ConnectX-5s: enhanced IPoIB), a NetworkManager desktop (61, a dual-port ConnectX-3) and a
 * Debian ifupdown server (62) as a new machine arrives, and the same three after a deploy
 * (test/fixtures/probe/fresh-*.txt) — each with at most one edit: what a deploy plans, checks and
 * writes for each manager, what it refuses and why, what status and rollback say, what a restore
 * puts back.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ConfigError, HostError } from '../../src/errors.js';
import { factOf } from '../../src/facts/host-facts.js';
import { loadInventory } from '../../src/inventory/load.js';
import type { Fleet, Host, Manager } from '../../src/inventory/model.js';
import { readProbe } from '../../src/plan/change-output.js';
import { detectManager } from '../../src/plan/detect-manager.js';
import { assessStatus, planDeploy, probeWants, type DeployPlan } from '../../src/plan/host-plan.js';
import { planRestore } from '../../src/plan/restore.js';
import { assessRollback, rollbackChanges, rollbackLines } from '../../src/plan/rollback.js';
import { loadPlaybook, type Playbook } from '../../src/playbook/playbook.js';
import { renderApplyScript } from '../../src/render/apply-script.js';
import { renderContext, renderHostFiles } from '../../src/render/host-files.js';
import { renderProbeScript } from '../../src/render/probe-script.js';
import { TAKE_ROUTING_LOCK } from '../../src/render/routing-lock.js';
import { sha256 } from '../../src/script/digest.js';
import { HOST_OVERRIDES } from '../../src/steps/registry.js';
import { summarizeChanges } from '../../src/ui/text/changes.js';
import { LINKS_NETPLAN_PATH, LINKS_STANZA_PATH } from '../../src/steps/links/decide.js';
import { profileUuid } from '../../src/steps/links/own-profile.js';
import { LINKS_FACT } from '../../src/steps/links/facts.js';
import { LINKS_RECORD_PATH } from '../../src/steps/links/record.js';
import { STEP_FACTS } from '../../src/steps/registry.js';
import { addIpLines, withFile, withSection } from '../helpers/probe-edit.js';

const fixture = (name: string) => readFileSync(new URL(`../fixtures/probe/${name}`, import.meta.url), 'utf8');
const facts = (probe: string) => readProbe(probe);

const INVENTORY = `fabric: { subnet: 172.16.0.0/16 }
hosts:
  60: { name: node60, address: 198.18.226.60, manager: netplan }
  61: { name: node61, address: 198.18.226.61, manager: networkmanager }
  62: { name: node62, address: 198.18.226.62, manager: ifupdown }
`;
const fleetWith = (extra = ''): Fleet => loadInventory(`${INVENTORY}${extra}`, 'lab.yaml', undefined, HOST_OVERRIDES);
const fleet = fleetWith();
const host = (id: number, f: Fleet = fleet): Host => f.hosts.find((h) => h.id === id)!;
const playbookText = (file: string) => readFileSync(new URL(`../../playbooks/${file}`, import.meta.url), 'utf8');
const hook = loadPlaybook(playbookText('dual-ib-routing.yaml'), 'dual-ib-routing.yaml');
const native = loadPlaybook(playbookText('dual-ib-routing-native.yaml'), 'dual-ib-routing-native.yaml');
const withLinks = (params: string) =>
  loadPlaybook(playbookText('dual-ib-routing.yaml').replace('  - links\n', `  - links: ${params}\n`), 'asked.yaml');
const withoutLinks = loadPlaybook(playbookText('dual-ib-routing.yaml').replace('  - links\n', ''), 'no-links.yaml');

const fresh = {
  netplan: fixture('fresh-netplan.txt'),
  nm: fixture('fresh-nm.txt'),
  ifupdown: fixture('fresh-ifupdown.txt'),
};
/**
 * Captured after a deploy, with the checksums of the routing program and data, hooks and networkd setting as
 * this ibfleet renders them: the capture predates changes to their text, which say nothing of links.
 */
const asDeployedNow = (probe: string, id: number, manager: Manager) =>
  renderHostFiles(hook, renderContext(hook, host(id), fleet, manager))
    .filter((f) => ['hook', 'networkd-conf', 'routing-script', 'routing-data'].includes(f.role))
    .reduce((text, f) => withFile(text, f.path, f.mode.toString(8), sha256(f.content)), probe);
const deployed = {
  netplan: asDeployedNow(fixture('fresh-netplan-deployed.txt'), 60, 'netplan'),
  nm: asDeployedNow(fixture('fresh-nm-deployed.txt'), 61, 'networkmanager'),
  ifupdown: asDeployedNow(fixture('fresh-ifupdown-deployed.txt'), 62, 'ifupdown'),
};

function refusal(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    if (error instanceof HostError) return error.message;
    throw error;
  }
  throw new Error('planned without refusing');
}

const managerLines = (plan: DeployPlan) =>
  [...(plan.parts.get('links')?.manager ?? []), ...(plan.parts.get('links')?.unlocked ?? [])].join('\n');
const fileOf = (plan: DeployPlan, path: string) => plan.files.find((f) => f.path === path)?.content;

describe('what the probe reads for links', () => {
  it("each NIC's kernel type, IPoIB mode and hardware address, each port's active MTU, every NetworkManager profile", () => {
    const links = factOf(facts(deployed.nm), LINKS_FACT);
    expect(links.sys.get('ib0')).toEqual({
      type: 1,
      mode: 'datagram',
      address: expect.stringMatching(/^80:00:/),
      pkey: '',
    });
    expect([...links.activeMtu]).toEqual([
      ['mlx4_0/1', 2048],
      ['mlx4_0/2', 2048],
    ]);
    expect(links.maxMtu.get('ib0')).toBe(65535);
    expect(links.nm?.map((p) => [p.name, p.type, p.iface, p.method, p.addresses, p.mtu, p.volatile])).toEqual([
      ['ibfleet-ib0', '802-3-ethernet', 'ib0', 'manual', ['172.16.61.1/16'], 'auto', false],
      ['ibfleet-ib1', '802-3-ethernet', 'ib1', 'manual', ['172.16.61.2/16'], 'auto', false],
    ]);
  });

  it('the enhanced-IPoIB ConnectX-5 of the netplan server has no connected-mode flag; its ports link at 4096', () => {
    const links = factOf(facts(fresh.netplan), LINKS_FACT);
    expect(links.sys.get('ib0')?.address).toMatch(/^00:00:/);
    expect(links.activeMtu.get('mlx5_0/1')).toBe(4096);
  });

  it("ifupdown's source lines, and ibfleet's record as it was written", () => {
    expect(factOf(facts(fresh.ifupdown), LINKS_FACT).sources).toEqual(['/etc/network/interfaces.d/*']);
    expect(factOf(facts(deployed.netplan), LINKS_FACT).record?.entries).toEqual([
      { iface: 'ib0', manager: 'netplan', down: true, mtu: 2044 },
      { iface: 'ib1', manager: 'netplan', down: true, mtu: 2044 },
    ]);
  });

  it('is one of the facts every probe reads', () => expect(STEP_FACTS).toContain(LINKS_FACT));
});

describe('a machine as it arrives: deploy configures its NICs in the manager, then the routing', () => {
  it('without the links step it is refused, as before: its NICs carry no address', () => {
    expect(refusal(() => planDeploy(host(61), fleet, withoutLinks, facts(fresh.nm)))).toBe(
      'ib0 carries no IPv4 address, but the convention gives NIC 1 of host 61 172.16.61.1/16; ib1 carries no IPv4 address, but the convention gives NIC 2 of host 61 172.16.61.2/16',
    );
    expect(refusal(() => planDeploy(host(60), fleet, withoutLinks, facts(fresh.netplan)))).toBe(
      'ib0 is down (no 172.16.60.1); ib1 is down (no 172.16.60.2)',
    );
  });

  it("NetworkManager: a profile of ibfleet's per NIC, with a uuid a later run finds, added and activated, the address awaited", () => {
    const plan = planDeploy(host(61), fleet, hook, facts(fresh.nm));
    const uuid = profileUuid(host(61), 'ib0');
    expect(
      plan.changes.filter((c) => c.kind === 'link-profile' || c.kind === 'link-address').map((c) => c.text),
    ).toEqual([
      'ib0: nmcli connection add ethernet ibfleet-ib0',
      'ib0: 172.16.61.1/16 (nmcli: new ethernet profile ibfleet-ib0, activated)',
      'ib1: nmcli connection add ethernet ibfleet-ib1',
      'ib1: 172.16.61.2/16 (nmcli: new ethernet profile ibfleet-ib1, activated)',
    ]);
    const lines = managerLines(plan);
    expect(lines).toContain(
      `tell 'ib0: profile ibfleet-ib0 added' 'ib0: nmcli connection add (profile ibfleet-ib0)' nmcli connection add type ethernet con-name ibfleet-ib0 ifname ib0 connection.uuid ${uuid} connection.autoconnect yes ipv4.method manual ipv4.addresses 172.16.61.1/16 ipv6.method ignore\n`,
    );
    expect(lines).toContain(
      `tell 'ib0: profile ibfleet-ib0 activated' 'ib0: nmcli connection up (profile ibfleet-ib0)' nmcli --wait 30 connection up uuid ${uuid}\n`,
    );
    // Only from a manager that took every command: after a failed one no address comes.
    expect(lines).toContain('[ "$status" -ne 0 ] || await_address ib0 172.16.61.1 || status=1');
    expect(fileOf(plan, LINKS_RECORD_PATH)).toContain(`nic ib0 networkmanager ${uuid} created link-mtu=2044`);
  });

  it('NetworkManager before 1.42 (nmcli gives a new profile no uuid there): the keyfile written, loaded, activated; a restore removes only its own', () => {
    const old = fresh.nm.replace('general running:1.42.4', 'general running:1.30.6');
    const plan = planDeploy(host(61), fleet, hook, facts(old));
    const uuid = profileUuid(host(61), 'ib0');
    const lines = managerLines(plan);
    expect(lines).not.toContain('nmcli connection add');
    expect(lines)
      .toContain(`tell 'ib0: profile ibfleet-ib0 written (/etc/NetworkManager/system-connections/ibfleet-ib0.nmconnection)' 'ib0: writing /etc/NetworkManager/system-connections/ibfleet-ib0.nmconnection' new_keyfile /etc/NetworkManager/system-connections/ibfleet-ib0.nmconnection '[connection]
id=ibfleet-ib0
uuid=${uuid}
type=802-3-ethernet
interface-name=ib0
autoconnect=true

[802-3-ethernet]

[ipv4]
method=manual
address1=172.16.61.1/16

[ipv6]
method=ignore
'
tell 'ib0: profile ibfleet-ib0 loaded' 'ib0: nmcli connection load (profile ibfleet-ib0)' nmcli connection load /etc/NetworkManager/system-connections/ibfleet-ib0.nmconnection
tell 'ib0: profile ibfleet-ib0 activated' 'ib0: nmcli connection up (profile ibfleet-ib0)' nmcli --wait 30 connection up uuid ${uuid}`);
    expect(fileOf(plan, LINKS_RECORD_PATH)).toContain(`nic ib0 networkmanager ${uuid} created link-mtu=2044`);
    const restore = planRestore(host(61), fleet, facts(old), plan.write, '', plan.parts)
      .steps.flatMap((x) => x.manager ?? [])
      .join('\n');
    expect(restore).toContain(
      `nmcli connection delete uuid ${uuid} >/dev/null 2>&1 || true\n! grep -q -x -F uuid=${uuid} /etc/NetworkManager/system-connections/ibfleet-ib0.nmconnection 2>/dev/null || rm -f /etc/NetworkManager/system-connections/ibfleet-ib0.nmconnection`,
    );
    // From 1.42 nmcli adds it with its uuid, as before.
    expect(managerLines(planDeploy(host(61), fleet, hook, facts(fresh.nm)))).not.toContain('new_keyfile');
  });

  it('the manager is told before the routing script runs, under the routing lock', () => {
    const plan = planDeploy(host(61), fleet, hook, facts(fresh.nm));
    const script = renderApplyScript(host(61), fleet, plan);
    expect(script.indexOf('nmcli connection add')).toBeGreaterThan(script.indexOf(TAKE_ROUTING_LOCK));
    expect(script.indexOf('nmcli connection add')).toBeLessThan(
      script.indexOf('/etc/ibfleet/ibfleet-routes || status=$?'),
    );
  });

  it("netplan: ibfleet's own file, checked by netplan generate before it goes live, then only the fabric NICs reconfigured", () => {
    const plan = planDeploy(host(60), fleet, hook, facts(fresh.netplan));
    expect(fileOf(plan, LINKS_NETPLAN_PATH)).toBe(`# ${LINKS_NETPLAN_PATH}
# Generated by ibfleet 0.1.0 for host 60 (node60), playbook dual-ib-routing.
# Do not edit: \`ibfleet status\` reports local changes as drift and \`ibfleet deploy\` replaces them.
#
# The fabric NICs ibfleet configures: each one's convention address, and the MTU and IPoIB mode
# the playbook asks for, rendered by systemd-networkd. \`ibfleet rollback\` removes this file.
network:
  version: 2
  ethernets:
    ib0:
      # NIC 1
      renderer: networkd
      addresses: [172.16.60.1/16]
    ib1:
      # NIC 2
      renderer: networkd
      addresses: [172.16.60.2/16]
`);
    const script = renderApplyScript(host(60), fleet, plan);
    expect(script).toContain(`netplan generate with ${LINKS_NETPLAN_PATH} among this host`);
    expect(managerLines(plan)).toContain("tell 'netplan generate' 'netplan generate' netplan generate\n");
    // Reloaded; reconfigured only where the reload did not configure a NIC (host/functions/links.sh).
    expect(managerLines(plan)).toContain('elif netplan_reload ib0 ib1; then :\n');
  });

  it('netplan: a file asking an IPoIB mode goes live only where netplan (0.105+) and networkd (250+) set one, checked before netplan generate', () => {
    // Real IPoIB interfaces (type 32), as a machine's are (the lab's are veths).
    const ipoib = fresh.netplan.replace(/^if (ib[01])\|1\|/gm, 'if $1|32|');
    const asked = planDeploy(host(60), fleet, withLinks('{ mode: datagram }'), facts(ipoib));
    expect(fileOf(asked, LINKS_NETPLAN_PATH)).toContain('      infiniband-mode: datagram\n');
    const script = renderApplyScript(host(60), fleet, asked);
    const guard = script.indexOf('[ "$status" -ne 0 ] || netplan_ipoib_mode || status=1');
    expect(guard).toBeGreaterThan(-1);
    expect(guard).toBeLessThan(script.indexOf('netplan generate --root-dir'));
    expect(script).toContain('netplan_ipoib_mode() {');
    // No mode asked: no look at the versions.
    expect(renderApplyScript(host(60), fleet, planDeploy(host(60), fleet, hook, facts(ipoib)))).not.toContain(
      'netplan_ipoib_mode',
    );
  });

  it('ifupdown: a stanza file in interfaces.d, brought up with ifup before the routing lock (ifup runs the hook itself)', () => {
    const plan = planDeploy(host(62), fleet, hook, facts(fresh.ifupdown));
    expect(fileOf(plan, LINKS_STANZA_PATH)).toContain('auto ib0\niface ib0 inet static\n\taddress 172.16.62.1/16\n');
    const script = renderApplyScript(host(62), fleet, plan);
    expect(script.indexOf("tell 'ib0: ifup' 'ib0: ifup' ifup ib0")).toBeGreaterThan(
      script.indexOf(`/etc/network/interfaces.d/.ibfleet-links.ibfleet-new.$$ ${LINKS_STANZA_PATH}`),
    );
    // ifup runs if-up.d, ibfleet's hook among them: nothing holds the routing lock its script takes.
    const lock = script.indexOf(TAKE_ROUTING_LOCK);
    expect(lock === -1 || lock > script.indexOf('ifup ib0')).toBe(true);
  });

  it('a second deploy changes nothing, and status is ok, on every manager', () => {
    for (const [id, probe] of [
      [60, deployed.netplan],
      [61, deployed.nm],
      [62, deployed.ifupdown],
    ] as const) {
      expect(planDeploy(host(id), fleet, hook, facts(probe)).changes, `host ${id}`).toEqual([]);
      expect(assessStatus(host(id), fleet, hook, facts(probe)).status, `host ${id}`).toBe('ok');
    }
  });

  it('status names what is missing before the deploy: the address, and the profile ibfleet would add', () => {
    const status = assessStatus(host(61), fleet, hook, facts(fresh.nm));
    expect(status.reasons.slice(0, 2)).toEqual([
      'ib0: no connection profile (ibfleet adds ibfleet-ib0)',
      'ib0 carries no IPv4 address, but the convention gives NIC 1 of host 61 172.16.61.1/16',
    ]);
  });
});

describe('status names drift of what links configured', () => {
  it('an edited profile: what nmcli would set again', () => {
    const edited = deployed.nm
      .replace('ipv4.addresses:172.16.61.1/16', 'ipv4.addresses:172.16.61.1/16, 10.9.9.9/24')
      .replace(
        /^(connection\.uuid:[^\n]+\nconnection\.id:ibfleet-ib0\n[\s\S]*?)ipv4\.method:manual/m,
        '$1ipv4.method:auto',
      );
    const status = assessStatus(host(61), fleet, hook, facts(edited));
    expect(status.status).toBe('drift');
    expect(status.reasons).toContain(
      'ib0: connection profile ibfleet-ib0 was changed: nmcli would set ipv4.method manual',
    );
  });

  it('an MTU or mode that is not as asked', () => {
    const status = assessStatus(host(60), fleet, withLinks('{ mtu: 2000, mode: datagram }'), facts(deployed.netplan));
    expect(status.reasons).toEqual(
      expect.arrayContaining(['ib0: MTU is 2044, want 2000', 'ib1: MTU is 2044, want 2000']),
    );
    expect(status.reasons.join('\n')).not.toContain('IPoIB mode');
  });

  it('an address gone from a NIC links configured', () => {
    const { dropIpLines } = {
      dropIpLines: (p: string, re: RegExp) =>
        p
          .split('\n')
          .filter((l) => !re.test(l))
          .join('\n'),
    };
    const status = assessStatus(host(62), fleet, hook, facts(dropIpLines(deployed.ifupdown, /^\d+: ib0 +inet /)));
    expect(status.reasons[0]).toBe(
      'ib0 carries no IPv4 address, but the convention gives NIC 1 of host 62 172.16.62.1/16',
    );
  });
});

describe('native persistence on a fresh machine: the profile or netplan device links provides carries the routing', () => {
  it('NetworkManager: the routing goes onto the profile links adds, not the hook', () => {
    const plan = planDeploy(host(61), fleet, native, facts(fresh.nm));
    expect(plan.persistence.kind).toBe('networkmanager');
    expect(managerLines(plan)).toContain(profileUuid(host(61), 'ib0'));
    expect(plan.parts.get('persist')?.manager?.join('\n')).toContain(
      `nmcli connection modify uuid ${profileUuid(host(61), 'ib0')} ipv4.route-table 941 +ipv4.routing-rules 'priority 941 from 172.16.61.1 table 941'`,
    );
  });

  it("netplan: ibfleet's routing file adds to the devices links' file defines", () => {
    const plan = planDeploy(host(60), fleet, native, facts(fresh.netplan));
    expect(plan.persistence).toEqual({
      kind: 'netplan',
      devices: [
        { iface: 'ib0', type: 'ethernets', id: 'ib0' },
        { iface: 'ib1', type: 'ethernets', id: 'ib1' },
      ],
    });
    expect(plan.notes.join('\n')).not.toContain('hook instead');
  });
});

describe('a NIC that already carries its convention address is left as it is, however it got it', () => {
  it('the NetworkManager host after the lab configured it: nothing of links changes', () => {
    const status = assessStatus(
      host(61),
      fleet,
      hook,
      facts(deployed.nm.replace(/@@ibfleet links record\n(?:\|.*\n)*/, '')),
    );
    expect(status.checks?.filter((c) => c.name.startsWith('link'))).toEqual([
      { name: 'link ib0', ok: true, detail: 'ib0: 172.16.61.1/16, configured outside ibfleet (left as it is)' },
      { name: 'link ib1', ok: true, detail: 'ib1: 172.16.61.2/16, configured outside ibfleet (left as it is)' },
    ]);
  });
});

describe("a NIC whose manager's own configuration gives it its address is the manager's, even while the kernel does not show it", () => {
  it('netplan: memserver34 with ib1 down (no address): the engine says so, as before links, and links writes nothing', async () => {
    const { dropIpLines } = await import('../helpers/probe-edit.js');
    const seeds = loadInventory(
      readFileSync(new URL('../fixtures/seeds.yaml', import.meta.url), 'utf8'),
      'seeds.yaml',
      undefined,
      HOST_OVERRIDES,
    );
    const memserver34 = seeds.hosts.find((h) => h.id === 34)!;
    const probe = dropIpLines(fixture('netplan-boot.txt'), /ib1 +inet /).replace(
      /^(\d+: ib1@if\d+: <BROADCAST,MULTICAST),UP,LOWER_UP>/m,
      '$1>',
    );
    expect(refusal(() => planDeploy(memserver34, seeds, hook, facts(probe)))).toBe('ib1 is down (no 172.16.34.2)');
  });
});

describe('refused before anything changes, each naming the NIC, the value and what is allowed', () => {
  it('another address in the fabric subnet on the NIC: someone may be using it', () => {
    const probe = addIpLines(
      fresh.nm,
      '4: ib0    inet 172.16.61.9/16 brd 172.16.255.255 scope global ib0\\       valid_lft forever preferred_lft forever',
    );
    expect(refusal(() => planDeploy(host(61), fleet, hook, facts(probe)))).toBe(
      'ib0 carries 172.16.61.9/16, but the convention gives NIC 1 of host 61 172.16.61.1/16',
    );
  });

  it("an interface the host does not have is the inventory's slip: named as before, nothing configured for it", () => {
    const slipped = { ...host(60), nics: host(60).nics.map((n) => (n.index === 2 ? { ...n, iface: 'ib9' } : n)) };
    expect(refusal(() => planDeploy(slipped, fleet, hook, facts(fresh.netplan)))).toBe(
      'interface ib9 (NIC 2) not found; the host has mgmt0, ib1, ib0',
    );
  });

  it('connected mode on an enhanced-IPoIB (mlx5) HCA', () => {
    expect(
      refusal(() => planDeploy(host(60), fleet, withLinks('{ mode: connected }'), facts(fresh.netplan))),
    ).toContain(
      'ib0: mode connected is refused: ib0 runs enhanced IPoIB (mlx5_0, ConnectX-4 or later; its hardware address 00:00:01:39… has no connected-mode flag), which is datagram only; allowed: datagram',
    );
  });

  it('an MTU above what datagram mode carries on the port (its active MTU less 4)', () => {
    expect(refusal(() => planDeploy(host(61), fleet, withLinks('{ mtu: 4000 }'), facts(fresh.nm)))).toContain(
      "ib0: MTU 4000 is above what datagram mode carries here (2044: mlx4_0/1 has active MTU 2048 (ibv_devinfo), less IPoIB's 4-byte header); allowed: 68..2044; connected mode (mode: connected) carries up to 65520",
    );
    // The ConnectX-5 links at 4096: 4092 fits.
    expect(() => planDeploy(host(60), fleet, withLinks('{ mtu: 4092 }'), facts(fresh.netplan))).not.toThrow();
  });

  it("without ibv_devinfo the datagram limit is InfiniBand's largest MTU less 4", () => {
    const probe = withSection(fresh.netplan, 'links ibv', []);
    expect(refusal(() => planDeploy(host(60), fleet, withLinks('{ mtu: 4093 }'), facts(probe)))).toContain(
      "(4092: the port's active MTU is unknown (ibv_devinfo is not installed)",
    );
  });

  it('a RoCE mode on an InfiniBand port', () => {
    expect(refusal(() => planDeploy(host(60), fleet, withLinks('{ roceMode: v2 }'), facts(fresh.netplan)))).toContain(
      'ib0: roceMode v2 is for RoCE ports, but mlx5_0/1 behind ib0 has link layer InfiniBand; leave roceMode out for InfiniBand ports',
    );
  });

  it("a partition on netplan, which has no P_Key child interfaces; the child's name is the NIC's interface", () => {
    const children = fleetWith().hosts.map((h) => ({
      ...h,
      nics: h.nics.map((n) => ({ ...n, iface: `${n.iface}.8002` })),
    }));
    expect(
      refusal(() => planDeploy(children[0]!, fleet, withLinks('{ pkey: 0x8002 }'), facts(fresh.netplan))),
    ).toContain('ib0.8002: pkey 0x8002: netplan has no P_Key child interfaces');
    expect(refusal(() => planDeploy(host(61), fleet, withLinks('{ pkey: 0x0002 }'), facts(fresh.nm)))).toContain(
      "ib0: pkey 0x8002: the address goes on the P_Key child ib0.8002, so the inventory lists that as NIC 1's interface",
    );
  });

  it('ifupdown whose interfaces does not source interfaces.d: the line to add', () => {
    const probe = withSection(fresh.ifupdown, 'links source', []);
    expect(refusal(() => planDeploy(host(62), fleet, hook, facts(probe)))).toBe(
      '/etc/network/interfaces does not source /etc/network/interfaces.d, where ibfleet puts the stanzas for ib0, ib1; add the line "source /etc/network/interfaces.d/*" to it (Debian\'s default has it)',
    );
  });

  it("a netplan file of the host's that configures the NIC without its address: ibfleet does not edit it", () => {
    const probe = withSection(fresh.netplan, 'netplan', [
      '#file /etc/netplan/01-ib.yaml',
      '|network:',
      '|  ethernets:',
      '|    ib0:',
      '|      dhcp4: true',
    ]);
    expect(refusal(() => planDeploy(host(60), fleet, hook, facts(probe)))).toBe(
      'ib0: /etc/netplan/01-ib.yaml configures it (ethernets.ib0) without 172.16.60.1/16; ibfleet does not edit that file: add the address there, or remove ib0 from it',
    );
  });

  it('one that matches the NIC by a name pattern or its MAC address, as netplan does: refused alike; given the address there, left to it', () => {
    const file = (...match: string[]) =>
      withSection(fresh.netplan, 'netplan', [
        '#file /etc/netplan/01-ib.yaml',
        '|network:',
        '|  ethernets:',
        '|    fabric:',
        '|      match:',
        ...match.map((m) => `|        ${m}`),
        '|      dhcp4: true',
      ]);
    expect(refusal(() => planDeploy(host(60), fleet, hook, facts(file('name: "ib[0]"'))))).toBe(
      'ib0: /etc/netplan/01-ib.yaml configures it (ethernets.fabric, match name ib[0]) without 172.16.60.1/16; ibfleet does not edit that file: add the address there, or remove ib0 from it',
    );
    expect(refusal(() => planDeploy(host(60), fleet, hook, facts(file('name: "ib*"'))))).toContain(
      'ib1: /etc/netplan/01-ib.yaml configures it (ethernets.fabric, match name ib*)',
    );
    const ib0Mac = /ib0@\S+ .*link\/ether (\S+)/.exec(fresh.netplan)![1]!;
    expect(
      refusal(() => planDeploy(host(60), fleet, hook, facts(file(`macaddress: "${ib0Mac.toUpperCase()}"`)))),
    ).toContain(`(ethernets.fabric, match macaddress ${ib0Mac.toUpperCase()})`);
    // Another NIC's pattern or MAC address: not ib0's.
    expect(managerLines(planDeploy(host(60), fleet, hook, facts(file('name: "ib[2-9]"'))))).toContain(
      'netplan_reload ib0 ib1',
    );
    expect(
      managerLines(planDeploy(host(60), fleet, hook, facts(file('macaddress: "02:00:00:00:00:01"', 'name: "ib*"')))),
    ).toContain('netplan_reload ib0 ib1');
  });
});

describe('a profile already bound to the NIC is changed, never a second one; its earlier properties kept for rollback', () => {
  const dhcp = (volatile: boolean) =>
    withSection(fresh.nm, 'links nm', [
      `file 11111111-2222-4333-8444-555555555555 ${volatile ? '/run' : '/etc'}/NetworkManager/system-connections/ib0.nmconnection`,
      'connection.uuid:11111111-2222-4333-8444-555555555555',
      'connection.id:Wired connection 1',
      'connection.type:802-3-ethernet',
      'connection.interface-name:ib0',
      'ipv4.method:auto',
      'ipv4.addresses:',
      '802-3-ethernet.mtu:auto',
    ]);

  it('the DHCP profile of ib0 gets the address, set manual; the record keeps auto', () => {
    const plan = planDeploy(host(61), fleet, hook, facts(dhcp(false)));
    expect(managerLines(plan)).toContain(
      "tell 'ib0: profile Wired connection 1 changed' 'ib0: nmcli connection modify (profile Wired connection 1)' nmcli connection modify uuid 11111111-2222-4333-8444-555555555555 ipv4.method manual +ipv4.addresses 172.16.61.1/16\n",
    );
    expect(managerLines(plan)).not.toContain('con-name ibfleet-ib0');
    expect(fileOf(plan, LINKS_RECORD_PATH)).toContain(
      'nic ib0 networkmanager 11111111-2222-4333-8444-555555555555 modified method=auto addresses= mtu=auto transport-mode= link-mtu=2044',
    );
  });

  it("one NetworkManager keeps in memory only (its own record of an address set by hand) is not the NIC's profile", () => {
    expect(managerLines(planDeploy(host(61), fleet, hook, facts(dhcp(true))))).toContain('con-name ibfleet-ib0');
  });

  /** A profile bound to a NIC otherwise than by its name: NetworkManager activates it on the NIC at boot all the same. */
  const unnamed = (name: string, ...bindings: string[]) =>
    withSection(fresh.nm, 'links nm', [
      'file 99999999-2222-4333-8444-555555555555 /etc/NetworkManager/system-connections/x.nmconnection',
      'connection.uuid:99999999-2222-4333-8444-555555555555',
      `connection.id:${name}`,
      'connection.type:802-3-ethernet',
      'connection.interface-name:',
      'ipv4.method:disabled',
      'ipv4.addresses:',
      '802-3-ethernet.mtu:auto',
      ...bindings,
    ]);

  it("one bound by MAC address (ib0's, as the kernel has it, in any case) is the one changed; another MAC binds another NIC", () => {
    const plan = planDeploy(
      host(61),
      fleet,
      hook,
      facts(unnamed('macbound', '802-3-ethernet.mac-address:A2:3D:F3:63:BB:9E')),
    );
    expect(managerLines(plan)).toContain(
      "tell 'ib0: profile macbound changed' 'ib0: nmcli connection modify (profile macbound)' nmcli connection modify uuid 99999999-2222-4333-8444-555555555555 ipv4.method manual +ipv4.addresses 172.16.61.1/16\n",
    );
    expect(managerLines(plan)).not.toContain('con-name ibfleet-ib0');
    expect(managerLines(plan)).toContain('con-name ibfleet-ib1');
    expect(fileOf(plan, LINKS_RECORD_PATH)).toContain(
      'nic ib0 networkmanager 99999999-2222-4333-8444-555555555555 modified method=disabled addresses= mtu=auto transport-mode=',
    );
    const other = planDeploy(
      host(61),
      fleet,
      hook,
      facts(unnamed('elsewhere', '802-3-ethernet.mac-address:A2:3D:F3:63:BB:9F')),
    );
    expect(managerLines(other)).toContain('con-name ibfleet-ib0');
  });

  it('one whose match.interface-name takes ib0 alone is the one changed; one that takes ib0 and ib1 is refused, naming both', () => {
    const only = planDeploy(host(61), fleet, hook, facts(unnamed('globbed', 'match.interface-name:ib[0]')));
    expect(managerLines(only)).toContain("tell 'ib0: profile globbed changed'");
    expect(managerLines(only)).toContain('con-name ibfleet-ib1');
    expect(
      refusal(() => planDeploy(host(61), fleet, hook, facts(unnamed('both', 'match.interface-name:ib*')))),
    ).toContain(
      'ib0: connection profile both applies to it and to ib1 (match.interface-name ib*); ibfleet gives each NIC its own address, which one profile cannot carry for both: bind the profile to one interface (connection.interface-name) or remove it',
    );
    // Bound by its name as well, it applies to that NIC only.
    const named = planDeploy(
      host(61),
      fleet,
      hook,
      facts(
        unnamed('named', 'match.interface-name:ib*').replace(
          'connection.interface-name:\n',
          'connection.interface-name:ib1\n',
        ),
      ),
    );
    expect(managerLines(named)).toContain("tell 'ib1: profile named changed'");
  });

  it('an IPoIB profile does not apply to an Ethernet NIC, nor one bound to nothing in particular', () => {
    const ipoib = unnamed('ipoib', 'match.interface-name:ib0').replace(
      'connection.type:802-3-ethernet',
      'connection.type:infiniband',
    );
    expect(managerLines(planDeploy(host(61), fleet, hook, facts(ipoib)))).toContain('con-name ibfleet-ib0');
    expect(managerLines(planDeploy(host(61), fleet, hook, facts(unnamed('any'))))).toContain('con-name ibfleet-ib0');
  });
});

describe('rollback: each NIC back as it was, from the record', () => {
  it('NetworkManager: the profiles ibfleet added deleted, the addresses gone, the MTU as it was', () => {
    const f = facts(deployed.nm);
    expect(
      assessRollback(host(61), fleet, f)
        .findings.filter((x) => !x.ok && x.id.startsWith('link'))
        .map((x) => x.detail),
    ).toEqual([
      `ib0: configured by ibfleet (connection profile ${profileUuid(host(61), 'ib0')} ibfleet added)`,
      `ib1: configured by ibfleet (connection profile ${profileUuid(host(61), 'ib1')} ibfleet added)`,
      `ib0: 172.16.61.1 configured by ibfleet (connection profile ${profileUuid(host(61), 'ib0')} ibfleet added)`,
      `ib1: 172.16.61.2 configured by ibfleet (connection profile ${profileUuid(host(61), 'ib1')} ibfleet added)`,
    ]);
    const lines = rollbackLines(host(61), fleet, f)
      .flatMap((l) => [...(l.manager ?? []), ...(l.kernel ?? [])])
      .join('\n');
    expect(lines).toContain(`if nmcli connection delete uuid ${profileUuid(host(61), 'ib0')} >/dev/null; then`);
    expect(lines).toContain('ip -4 addr del 172.16.61.1/16 dev ib0 2>/dev/null');
    expect(lines).toContain('ip link set dev ib0 mtu 2044 2>/dev/null');
  });

  it('netplan: networkd reloaded without the file, and the links that were down taken down again', () => {
    const lines = rollbackLines(host(60), fleet, facts(deployed.netplan))
      .flatMap((l) => [...(l.manager ?? []), ...(l.kernel ?? [])])
      .join('\n');
    expect(lines).toContain('networkctl reconfigure ib0 ib1 || status=1');
    expect(lines).toContain('ip link set dev ib1 down 2>/dev/null');
  });

  it.each([
    ['nm', 61, '−2 link profiles −2 addresses −2 rules −2 table routes'],
    ['netplan', 60, '−2 addresses −2 rules −2 table routes'],
    ['ifupdown', 62, '−2 addresses −2 rules −2 table routes'],
  ] as const)(
    '%s: said as deploy said it, and no main-table route promised through a NIC that loses its address',
    (manager, id, signed) => {
      const summary = summarizeChanges(rollbackChanges(assessRollback(host(id), fleet, facts(deployed[manager]))));
      expect(summary.split(', ')[0]).toBe(signed);
    },
  );

  it("ifupdown: ifdown while ibfleet's stanza is still there", () => {
    expect(rollbackLines(host(62), fleet, facts(deployed.ifupdown)).flatMap((l) => l.beforeFiles ?? [])).toContain(
      'ifdown --force ib0 >/dev/null 2>&1 || true',
    );
  });

  it('ifupdown: a link that was up before ibfleet configured it is up again after the ifdown (issue 29)', () => {
    const upBefore = deployed.ifupdown.replace(
      '|nic ib1 ifupdown link-mtu=2044 link=down',
      '|nic ib1 ifupdown link-mtu=2044',
    );
    const lines = rollbackLines(host(62), fleet, facts(upBefore));
    expect(lines.flatMap((l) => l.manager ?? []).filter((l) => l.startsWith('ip link set'))).toEqual([
      'ip link set dev ib1 up 2>/dev/null',
    ]);
    expect(lines.flatMap((l) => l.kernel ?? []).filter((l) => / (up|down) /.test(l))).toEqual([
      'ip link set dev ib0 down 2>/dev/null',
    ]);
  });
});

describe('the restore after a failed verification puts the NICs back as the probe before the change found them', () => {
  it('a fresh NetworkManager host: the profiles the change added deleted, the addresses gone', () => {
    const before = facts(fresh.nm);
    const plan = planDeploy(host(61), fleet, hook, before);
    const spec = planRestore(host(61), fleet, before, plan.write, '', plan.parts);
    const lines = spec.steps.flatMap((s) => [...(s.manager ?? []), ...(s.kernel ?? [])]).join('\n');
    expect(lines).toContain(`nmcli connection delete uuid ${profileUuid(host(61), 'ib0')} >/dev/null 2>&1 || true`);
    expect(lines).toContain('ip -4 addr del 172.16.61.1/16 dev ib0 2>/dev/null');
  });

  it.each([
    ['down, as a machine arrives: down again after the kernel state', 'BROADCAST,MULTICAST', 'kernel', 'down'],
    [
      "up (an admin's ip link set up): up again, after ifdown and before the kernel state",
      'BROADCAST,MULTICAST,UP',
      'manager',
      'up',
    ],
  ] as const)('a fresh ifupdown host whose NICs were %s (issue 29)', (_what, flags, part, state) => {
    const before = facts(fresh.ifupdown.replace(/<BROADCAST,MULTICAST>/g, `<${flags}>`));
    const plan = planDeploy(host(62), fleet, hook, before);
    const steps = planRestore(host(62), fleet, before, plan.write, '', plan.parts).steps;
    const lines = (key: 'manager' | 'kernel') => steps.flatMap((s) => s[key] ?? []);
    const links = ['ib0', 'ib1'].map((iface) => `ip link set dev ${iface} ${state} 2>/dev/null`);
    expect(lines(part)).toEqual(expect.arrayContaining(links));
    expect(lines(part === 'kernel' ? 'manager' : 'kernel').filter((l) => l.startsWith('ip link set dev ib0 '))).toEqual(
      part === 'kernel' ? [] : ['ip link set dev ib0 mtu 2044 2>/dev/null'],
    );
    // A route needs its NIC up: up before policy-routing's lines; down after the address is gone.
    if (part === 'kernel') expect(lines('kernel').at(-1)).toBe('ip link set dev ib1 down 2>/dev/null');
  });

  it('a fresh ifupdown host: ifdown before the stanza file goes', () => {
    const before = facts(fresh.ifupdown);
    const plan = planDeploy(host(62), fleet, hook, before);
    expect(
      planRestore(host(62), fleet, before, plan.write, '', plan.parts).steps.flatMap((s) => s.beforeFiles ?? []),
    ).toEqual(['ifdown --force ib0 >/dev/null 2>&1 || true', 'ifdown --force ib1 >/dev/null 2>&1 || true']);
  });
});

describe('asked per host in the inventory (links: on the host or in defaults)', () => {
  it('defaults then the host, key by key, over the playbook', () => {
    const f = fleetWith('defaults:\n  links: { mtu: 1500, mode: datagram }\n'.replace('hosts:', 'hosts:'));
    expect(host(60, f).overrides).toEqual({ links: { mtu: 1500, mode: 'datagram' } });
    const g = loadInventory(
      INVENTORY.replace('manager: netplan }', 'manager: netplan, links: { mtu: 2000 } }') +
        'defaults:\n  links: { mode: datagram }\n',
      'lab.yaml',
      undefined,
      HOST_OVERRIDES,
    );
    expect(host(60, g).overrides).toEqual({ links: { mode: 'datagram', mtu: 2000 } });
    expect(host(61, g).overrides).toEqual({ links: { mode: 'datagram' } });
  });

  it('a refused value or key names file:line:col and what is allowed', () => {
    const bad = INVENTORY.replace(
      'manager: netplan }',
      'manager: netplan, links: { mode: fast, pkey: 0x8000, speed: 1 } }',
    );
    try {
      loadInventory(bad, 'lab.yaml', undefined, HOST_OVERRIDES);
      throw new Error('accepted');
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      expect(
        (error as ConfigError).problems.map(
          (p) => `${p.position.line}:${p.position.column} ${p.message}${p.hint ? ` (${p.hint})` : ''}`,
        ),
      ).toEqual([
        '3:80 hosts.60.links.mode = "fast": mode is datagram or connected (IPoIB)',
        '3:92 hosts.60.links.pkey = 0x8000: pkey 0x8000 is not a partition: 0 and 0x8000 are invalid P_Keys; allowed: 0x0001..0x7fff (written as full member 0x8001..0xffff)',
        '3:100 hosts.60.links.speed: unknown key "speed" (allowed here: mode, mtu, pkey, roceMode)',
      ]);
    }
  });

  it('numbers are spelt as everywhere in the inventory: mtu in plain decimal digits, a P_Key in hex (8002 is decimal 8002 = 0x1f42)', () => {
    const bad =
      INVENTORY.replace('manager: netplan }', 'manager: netplan, links: { mtu: 1e3, pkey: 8002 } }') +
      'defaults:\n  links: { mtu: 0x7d0, pkey: "8002" }\n';
    const problems = (() => {
      try {
        loadInventory(bad, 'lab.yaml', undefined, HOST_OVERRIDES);
        return [];
      } catch (error) {
        return (error as ConfigError).problems.map(
          (p) => `${p.position.line}:${p.position.column} ${p.message}${p.hint ? ` (${p.hint})` : ''}`,
        );
      }
    })();
    expect(problems).toEqual([
      '3:79 hosts.60.links.mtu = 1e3 is not written in decimal (YAML reads it as 1000) (whole numbers are plain decimal digits; write 1000 if that is what you mean)',
      '3:90 hosts.60.links.pkey = 8002 is decimal 8002 = 0x1f42 (a P_Key is written in hex: 0x8002)',
      `${bad.split('\n').length - 1}:17 defaults.links.mtu = 0x7d0 is not written in decimal (YAML reads it as 2000) (whole numbers are plain decimal digits; write 2000 if that is what you mean)`,
      `${bad.split('\n').length - 1}:30 defaults.links.pkey = 8002 is decimal 8002 = 0x1f42 (a P_Key is written in hex: 0x8002)`,
    ]);
    for (const [mtu, pkey] of [
      ['0o3720', '0x8002'],
      ['2044.0', '0x8002'],
      ['2044', '0x0002'],
    ]) {
      const text = INVENTORY.replace('manager: netplan }', `manager: netplan, links: { mtu: ${mtu}, pkey: ${pkey} } }`);
      if (mtu === '2044')
        expect(host(60, loadInventory(text, 'lab.yaml', undefined, HOST_OVERRIDES)).overrides).toEqual({
          links: { mtu: 2044, pkey: '0x8002' },
        });
      else
        expect(() => loadInventory(text, 'lab.yaml', undefined, HOST_OVERRIDES)).toThrow(
          `hosts.60.links.mtu = ${mtu} is not written in decimal`,
        );
    }
  });

  it("without the steps' overrides an inventory saying links: is refused as any unknown key", () => {
    expect(() =>
      loadInventory(INVENTORY.replace('manager: netplan }', 'manager: netplan, links: { mtu: 1500 } }'), 'lab.yaml'),
    ).toThrow(/unknown key "links"/);
  });

  it("a host's MTU override is what deploy writes for it", () => {
    const f = loadInventory(
      INVENTORY.replace('manager: netplan }', 'manager: netplan, links: { mtu: 4000 } }'),
      'lab.yaml',
      undefined,
      HOST_OVERRIDES,
    );
    expect(
      planDeploy(host(60, f), f, hook, facts(fresh.netplan)).files.find((x) => x.path === LINKS_NETPLAN_PATH)?.content,
    ).toContain('      mtu: 4000\n');
  });
});

describe('P_Keys as the playbook gives them', () => {
  const pkeyOf = (value: string) =>
    (
      loadPlaybook(`name: p\nsteps:\n  - policy-routing\n  - links: { pkey: ${value} }\n`, 'p.yaml') as Playbook
    ).steps.find((s) => s.module.name === 'links')!.params;
  it.each([
    ['0x8002', '0x8002'],
    ['0x0002', '0x8002'],
    ["'0x7fff'", '0xffff'],
  ])('%s → full member %s', (given, want) => expect(pkeyOf(given)).toEqual({ pkey: want }));

  it.each([
    ['2', 'pkey = 2 is decimal 2 = 0x2 (a P_Key is written in hex: 0x2)'],
    ['32770', 'pkey = 32770 is decimal 32770 = 0x8002 (a P_Key is written in hex: 0x8002)'],
    ["'8002'", 'pkey = 8002 is decimal 8002 = 0x1f42 (a P_Key is written in hex: 0x8002)'],
  ])('%s, not written 0x…, is refused naming both readings', (given, says) => {
    expect(() => pkeyOf(given)).toThrow(says);
  });

  it.each(['0', '0x8000', '0x10000', 'fast'])('%s is refused with what is allowed', (given) => {
    expect(() => pkeyOf(given)).toThrow(/pkey/);
  });
});

describe('manager detection on a machine as it arrives', () => {
  it('ifupdown: nothing configures the NICs, nothing else runs, ifupdown brought up lo', () => {
    const detection = detectManager({ ...host(62), manager: 'auto' }, facts(fresh.ifupdown));
    expect(detection).toMatchObject({ ok: true, manager: 'ifupdown' });
  });

  it('NetworkManager and netplan: by the daemon that runs', () => {
    expect(detectManager({ ...host(61), manager: 'auto' }, facts(fresh.nm))).toMatchObject({
      ok: true,
      manager: 'networkmanager',
    });
    expect(detectManager({ ...host(60), manager: 'auto' }, facts(fresh.netplan))).toMatchObject({
      ok: true,
      manager: 'netplan',
    });
  });
});

describe('what the probe reads for links', () => {
  it("the drivers' and ports' MTU limits (ip -d link, ibv_devinfo: two processes a host) only where an MTU is asked, by the playbook or the host", () => {
    const probe = (playbook: typeof hook, h = host(60)) =>
      renderProbeScript(h, fleet, { wants: probeWants(playbook, h) });
    expect(probe(hook)).not.toContain('ibv_devinfo');
    expect(probe(hook)).not.toContain('ip -d -o link');
    expect(probe(withLinks('{ mtu: 2044 }'))).toContain('ibv_devinfo');
    expect(probe(withLinks('{ mtu: 2044 }'))).toContain('ip -d -o link');
    const asked = loadInventory(
      INVENTORY.replace('manager: netplan }', 'manager: netplan, links: { mtu: 2044 } }'),
      'lab.yaml',
      undefined,
      HOST_OVERRIDES,
    );
    expect(
      probe(
        hook,
        asked.hosts.find((h) => h.id === 60)!,
      ),
    ).toContain('ibv_devinfo');
    expect(
      probe(
        hook,
        asked.hosts.find((h) => h.id === 61)!,
      ),
    ).not.toContain('ibv_devinfo');
  });

  it("ifupdown's source lines are read by the shell alone, and only source lines count", () => {
    const parsed = factOf(
      facts(
        withSection(fresh.ifupdown, 'links source', [
          '|source /etc/network/interfaces.d/*',
          '|  address 10.0.0.1 # a source of trouble',
          '|source-directory /etc/network/more',
        ]),
      ),
      LINKS_FACT,
    );
    expect(parsed.sources).toEqual(['/etc/network/interfaces.d/*', '/etc/network/more']);
  });
});

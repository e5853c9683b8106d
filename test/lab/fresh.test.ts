/**
 * `lab up --fresh`: what a host as a new machine arrives holds — its NICs and manager, nothing
 * configuring the NICs — and what the lab's RDMA emulation shows of them for the links step's
 * checks (IPoIB's hardware address with or without the connected-mode flag, each port's active MTU,
 * answered by the ibv_devinfo stand-in). Pure, and the stand-in run for real on a layer of files.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { renderHostView, renderInterfaces, renderNetplanNetworkd } from '../../src/lab/emulation.js';
import { renderIbvDevinfoStandIn } from '../../src/lab/ibv-devinfo-standin.js';
import { fabricUpBatch, renderNetworkBootScript } from '../../src/lab/manager-boot.js';
import { planLab } from '../../src/lab/plan.js';
import { ACTIVE_MTU_FILE, renderSysfsTree } from '../../src/lab/rdma-emulation.js';
import { seedsFleet } from './fleet.js';

const plan = planLab({
  fleet: seedsFleet(),
  name: 'demo',
  hosts: [16, 34, 40, 41],
  managers: new Map([
    [40, 'ifupdown'],
    [41, 'ifupdown'],
  ]),
  fresh: [16, 34, 40],
});
const host = (id: number) => plan.hosts.find((h) => h.id === id)!;
const work = mkdtempSync(join(tmpdir(), 'ibfleet-lab-fresh-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('a fresh host: the NICs are there, nothing configures them', () => {
  it('is marked so in the plan (the lab state), only where asked', () => {
    expect(plan.hosts.map((h) => [h.id, h.fresh === true])).toEqual([
      [16, true],
      [34, true],
      [40, true],
      [41, false],
    ]);
    expect(() => planLab({ fleet: seedsFleet(), name: 'demo', hosts: [16], fresh: [17] })).toThrow(
      '--fresh names host 17, not in the lab (--hosts 16)',
    );
  });

  it("netplan: the server's file lists its management NIC only; the boot waits for no fabric NIC", () => {
    expect(renderNetplanNetworkd(plan, host(34))).not.toContain('ib0');
    expect(renderNetworkBootScript(plan, host(34))).not.toContain('ib0 routable');
  });

  it('NetworkManager: no keyfile for the NICs, and no default profile NetworkManager would make of a veth', () => {
    const view = renderHostView(plan, host(16), 'ssh-ed25519 AAAA lab');
    expect(view.files.filter((f) => f.path.startsWith('/etc/NetworkManager/system-connections/'))).toEqual([]);
    expect(view.files.find((f) => f.path === '/etc/NetworkManager/conf.d/90-ibfleet-lab.conf')!.content).toContain(
      '[main]\ndns=none\nno-auto-default=*\n',
    );
  });

  it("ifupdown: no stanza for the NICs; interfaces sources interfaces.d as Debian's does", () => {
    const fresh = renderInterfaces(plan, host(40));
    expect(fresh).not.toContain('ib0');
    expect(fresh).toContain('source /etc/network/interfaces.d/*\n');
    expect(renderInterfaces(plan, host(41))).toContain('auto ib0\niface ib0 inet static\n\taddress 172.16.41.1/16\n');
  });

  it('without daemons, the lab adds no address to a fresh host', () => {
    expect(fabricUpBatch(host(34))).toEqual([]);
    expect(fabricUpBatch(host(41))).toEqual([
      'link set ib0 up',
      'address add 172.16.41.1/16 dev ib0',
      'link set ib1 up',
      'address add 172.16.41.2/16 dev ib1',
    ]);
  });
});

describe('the RDMA emulation shows what links checks', () => {
  const address = (id: number, iface: string) =>
    renderSysfsTree(host(id)).files.find((f) => f.path === `devices/virtual/net/${iface}/address`)!.content;

  it("IPoIB's 20-byte hardware address: the RC flag on the ConnectX-3 (NetworkManager hosts), clear on the enhanced-IPoIB ConnectX-5s", () => {
    expect(address(16, 'ibs5f0')).toMatch(/^80(:[0-9a-f]{2}){19}$/);
    expect(address(34, 'ib0')).toMatch(/^00(:[0-9a-f]{2}){19}$/);
  });

  it("ibv_devinfo answers each port's active MTU from the layer, as rdma-core's does for a real HCA", () => {
    const root = join(work, 'sys');
    const tree = renderSysfsTree(host(16));
    for (const f of tree.files) {
      mkdirSync(dirname(join(root, f.path)), { recursive: true });
      writeFileSync(join(root, f.path), `${f.content}\n`);
    }
    // The stand-in reads /sys/class/infiniband; here the layer's device directory stands in for it.
    const device = tree.files
      .find((f) => f.path.endsWith(`ports/1/${ACTIVE_MTU_FILE}`))!
      .path.replace(/\/ports\/1\/.*$/, '');
    const script = renderIbvDevinfoStandIn().replace(
      'for d in /sys/class/infiniband/*; do',
      `for d in ${join(root, device)}; do`,
    );
    const result = spawnSync('sh', ['-c', script, 'ibv_devinfo', '-i', '2'], { encoding: 'utf8' });
    expect(result.status, result.stderr).toBe(0);
    expect(result.stdout).toContain('hca_id:\tmlx4_0\n');
    expect(result.stdout).toContain(
      '\t\tport:\t2\n\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n\t\t\tmax_mtu:\t\t4096 (5)\n\t\t\tactive_mtu:\t\t2048 (4)\n',
    );
    expect(result.stdout).not.toContain('port:\t1\n');
  });
});

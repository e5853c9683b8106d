/**
 * A RoCE lab host (`lab up --link-layer ethernet`) as its sysfs layer and boot show it: link layer
 * Ethernet, no LID, no IPoIB mode, a GID table with the NIC's address at 3 (v2) naming its netdev,
 * and the RDMA CM's configfs mounted writable over the read-only sysfs. InfiniBand hosts keep GID 0
 * and a P_Key table, and no configfs. Pure.
 */
import { describe, expect, it } from 'vitest';
import { planLab } from '../../src/lab/plan.js';
import { parseLinkLayers } from '../../src/lab/options.js';
import { renderRdmaCmConfigfs, renderSysfsTree } from '../../src/lab/rdma-emulation.js';
import { renderBootScript } from '../../src/lab/scripts.js';
import { seedsFleet } from './fleet.js';

const plan = planLab({
  fleet: seedsFleet(),
  name: 'roce',
  hosts: [16, 34],
  mgmtSubnet: '198.18.9.0/24',
  linkLayers: parseLinkLayers(['34=ethernet']),
});
const [h16, h34] = [plan.hosts[0]!, plan.hosts[1]!];
const file = (tree: ReturnType<typeof renderSysfsTree>, suffix: string) =>
  tree.files.find((f) => f.path.endsWith(suffix))?.content;

describe('the RoCE lab host', () => {
  it('--link-layer takes ethernet or infiniband, for all hosts or some', () => {
    expect(parseLinkLayers(['ethernet']).all).toBe('ethernet');
    expect(() => parseLinkLayers(['34=roce'])).toThrow(/"roce" is not a link layer \(allowed: infiniband, ethernet\)/);
    expect([h16.linkLayer, h34.linkLayer]).toEqual([undefined, 'ethernet']);
  });

  it("shows Ethernet ports whose GID table follows the NIC's address, and no IPoIB mode", () => {
    const tree = renderSysfsTree(h34);
    expect(file(tree, 'mlx5_1/ports/1/link_layer')).toBe('Ethernet');
    expect(file(tree, 'mlx5_1/ports/1/sm_lid')).toBe('0x0');
    expect(file(tree, 'mlx5_1/ports/1/gids/3')).toBe('0000:0000:0000:0000:0000:ffff:ac10:2202');
    expect(file(tree, 'mlx5_1/ports/1/gid_attrs/types/3')).toBe('RoCE v2');
    expect(file(tree, 'mlx5_1/ports/1/gid_attrs/ndevs/3')).toBe('ib1');
    expect(file(tree, 'net/ib1/mode')).toBeUndefined();
    expect(tree.dirs).toContain('kernel/config');
    expect(renderRdmaCmConfigfs(h34).map((f) => `${f.path} ${f.content}`)).toEqual([
      'rdma_cm/mlx5_0/ports/1/default_roce_mode RoCE v2',
      'rdma_cm/mlx5_1/ports/1/default_roce_mode RoCE v2',
    ]);
    expect(renderBootScript(plan, h34, '/usr/sbin/sshd')).toContain(
      'mount --bind /run/ibfleet-lab-host/configfs /sys/kernel/config',
    );
  });

  it('an InfiniBand host keeps GID 0 (subnet prefix and GUID) and the default partition, and no configfs', () => {
    const tree = renderSysfsTree(h16);
    expect(file(tree, 'mlx4_0/ports/2/link_layer')).toBe('InfiniBand');
    expect(file(tree, 'mlx4_0/ports/2/gids/0')).toMatch(/^fe80:0000:0000:0000:/);
    expect(file(tree, 'mlx4_0/ports/2/pkeys/0')).toBe('0xffff');
    expect(renderRdmaCmConfigfs(h16)).toEqual([]);
    expect(renderBootScript(plan, h16, '/usr/sbin/sshd')).not.toContain('/sys/kernel/config');
  });
});

/**
 * ibfleet across the network managers' generations, end to end: what an older or newer manager
 * does differently from the machine's own, and that ibfleet holds there.
 *
 * - netplan 0.101 (Debian 11) writes /run/NetworkManager/conf.d/netplan.conf on every `netplan
 *   generate`, whether or not NetworkManager runs: a fresh netplan host with that directory and no
 *   NetworkManager is still detected as netplan.
 *
 * Lab: 70 netplan, fresh.
 */
import { describe, expect, it } from 'vitest';
import { json } from '../helpers/cli.js';
import { IS_ROOT, noteIfNotRoot, testLab, useLab } from '../lab/helpers.js';
import { managerLab } from './managers.js';

const LAB = testLab('e2e-generations');

noteIfNotRoot('test/e2e/generations.test.ts (manager generations)');

describe.skipIf(!IS_ROOT)('manager generations (needs root)', () => {
  const lab = useLab({ name: LAB.name, mgmtSubnet: LAB.mgmtSubnet, hosts: [70], managers: { 70: 'netplan' }, fresh: [70] });
  const m = managerLab(lab);

  it("a fresh netplan host where netplan 0.101 left /run/NetworkManager/conf.d/netplan.conf and NetworkManager does not run is detected as netplan", async () => {
    // What netplan 0.101's generator writes there on a host whose fabric NICs nothing configures yet.
    await m.sh(70, "mkdir -p /run/NetworkManager/conf.d && printf '[keyfile]\\n# devices managed by networkd\\nunmanaged-devices+=\\n' >/run/NetworkManager/conf.d/netplan.conf");
    expect(await m.sh(70, 'command -v nmcli >/dev/null && nmcli -t -f RUNNING general 2>&1; ls /run/NetworkManager')).toMatch(/conf\.d$/);
    const planned = json(await m.run('deploy', '--hosts', '70', '--dry-run', '--json'));
    const reasons = planned.hosts[0]!.reasons.join('\n');
    expect(reasons).not.toMatch(/cannot tell which network manager/);
    expect(planned.hosts[0]).toMatchObject({ manager: 'netplan' });
  });
});

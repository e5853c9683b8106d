import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadInventory } from '../../src/inventory/load.js';
import { routingScriptFor } from '../../src/render/host-files.js';
import { renderSysctlConf, type SysctlParams } from '../../src/steps/fabric-sysctl/sysctl-file.js';
import { loadFixturePlaybook } from '../fixtures/fixtures.js';

const fleetOf = (hosts: number) => loadInventory(`fabric: { subnet: 172.16.0.0/16 }\nhosts:\n${Array.from({ length: hosts }, (_, i) => `  ${i + 1}: { name: h${i + 1} }`).join('\n')}\n`, 'fleet.yaml');
const playbook = loadFixturePlaybook();
const sysctl = playbook.steps.find((s) => s.module.name === 'fabric-sysctl')!.params as SysctlParams;

describe('the fabric-sysctl step sizes the neighbour table for the fleet', () => {
  it('200 dual-NIC hosts: the sysctl file persists gc_thresh1/2/3 = 256/1024/2048 and the routing script raises them, largest first', () => {
    const fleet = fleetOf(200);
    const host = fleet.hosts[0]!;
    expect(renderSysctlConf(host, fleet, playbook.name, sysctl)).toContain('\nnet.ipv4.neigh.default.gc_thresh1 = 256\nnet.ipv4.neigh.default.gc_thresh2 = 1024\nnet.ipv4.neigh.default.gc_thresh3 = 2048\n');
    const script = routingScriptFor(playbook, host, fleet);
    expect(script).toContain('raise_neigh gc_thresh3 2048\nraise_neigh gc_thresh2 1024\nraise_neigh gc_thresh1 256\n');
    const dir = mkdtempSync(join(tmpdir(), 'ibfleet-neigh-'));
    try {
      writeFileSync(join(dir, 'routes'), script);
      const checked = spawnSync('shellcheck', ['-s', 'sh', '-S', 'style', join(dir, 'routes')], { encoding: 'utf8' });
      expect(checked.stdout + checked.stderr).toBe('');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a fleet the kernel defaults already fit: neither file mentions them (an admin\'s higher limits stay)', () => {
    const fleet = fleetOf(2);
    expect(renderSysctlConf(fleet.hosts[0]!, fleet, playbook.name, sysctl)).not.toContain('gc_thresh');
    expect(routingScriptFor(playbook, fleet.hosts[0]!, fleet)).not.toContain('raise_neigh');
  });
});

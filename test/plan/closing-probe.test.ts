/**
 * The probe closing a change (ProbeOptions.closing) reads again everything a change can alter and
 * leaves out only what none can — who runs it, the machine's name, OS and tools, what stands in the
 * way of ibfleet's files — which the controller takes from the probe before the change. A change
 * whose result is wrong fails verification even where the probe before it saw the host right:
 * nothing verification reads is taken from before. Its run on a real namespace host:
 * test/root/render/closing-probe-run.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { loadInventory } from '../../src/inventory/load.js';
import { readChangeOutput, readProbe } from '../../src/plan/change-output.js';
import { planDeploy, reassessDeploy, verification } from '../../src/plan/host-plan.js';
import { AFTER_MARK, afterProbe } from '../../src/render/apply-script.js';
import { obstacleProbe } from '../../src/facts/obstacles.js';
import { PROBE_VERSION } from '../../src/facts/probe-format.js';
import { renderProbeBody, WRITE_TARGETS } from '../../src/render/probe-script.js';
import { sentShell } from '../../src/script/sent-shell.js';
import { loadFixturePlaybook } from '../fixtures/fixtures.js';
import { deployedProbe, fixture } from '../helpers/fake-transport.js';

const playbook = loadFixturePlaybook();
const fleet = loadInventory(
  'fabric: { subnet: 172.16.0.0/16 }\nhosts:\n  34: { name: memserver34, address: 198.18.99.34 }\n',
  'test.yaml',
);
const host = fleet.hosts[0]!;
const deployed = deployedProbe(host, fleet, playbook, 'netplan');

/** What the closing probe prints of a host: the probe's output without the sections it leaves out. */
function closingOutput(output: string): string {
  const left = /^@@ibfleet (probe|uid|os|hostname|tools|in-the-way|head) ?/;
  let keep = true;
  return output
    .split('\n')
    .filter((line) => (line.startsWith('@@ibfleet ') ? (keep = !left.test(line)) : keep))
    .join('\n');
}

/** Verification of a deploy planned from the boot state, from the closing probe's `output` after it. */
function verify(output: string, opening = readProbe(deployed)) {
  const plan = planDeploy(host, fleet, playbook, readProbe(fixture('netplan-boot.txt')));
  const { after } = readChangeOutput(`ibfleet-routes: ib0: configured\n${AFTER_MARK}\n${output}`, opening);
  return verification(reassessDeploy(host, fleet, playbook, plan, after));
}

describe('the probe closing a change', () => {
  it('leaves out only what no change alters', () => {
    const closing = afterProbe(host, fleet);
    for (const left of ['probe_host', 'in-the-way', 'probe_manager_config']) expect(closing).not.toContain(left);
    expect(closing).toContain('\tprobe_files sums ');
    // Every other line of the probe after a change is there, as the probe before it has it.
    const whole = renderProbeBody(host, fleet, { managerEvidence: false, fabric: false });
    const leftOut = new Set([
      ...sentShell('probe-host').split('\n'),
      ...obstacleProbe(WRITE_TARGETS).join('\n').split('\n'),
      `\tprobe_host ${PROBE_VERSION}`,
    ]);
    const kept = new Set(closing.split('\n'));
    const dropped = whole.split('\n').filter((l) => !kept.has(l) && !leftOut.has(l));
    expect(dropped).toEqual([expect.stringMatching(/^\tprobe_files head /)]);
    // A change cut off from the controller is looked at by a probe that reads it all.
    expect(afterProbe(host, fleet, { whole: true })).toContain('\tprobe_host ');
  });

  it("verifies from the closing probe's facts, with the opening probe's user and tools", () => {
    expect(verify(closingOutput(deployed))).toEqual({ ok: true });
    const { after } = readChangeOutput(`${AFTER_MARK}\n${closingOutput(deployed)}`, readProbe(deployed));
    const whole = readProbe(deployed);
    expect({ ...after, contents: whole.contents }).toEqual(whole);
  });

  it.each([
    ['a rule missing', (o: string) => o.replace('941:\tfrom 172.16.34.1 lookup 941\n', ''), /rule/],
    [
      'a table route missing',
      (o: string) => o.replace('172.16.0.0/16 dev ib0 proto kernel scope link src 172.16.34.1 table 941\n', ''),
      /table 941/,
    ],
    [
      'a file not written',
      (o: string) => o.replace(/^[0-9a-f]{64}( +\/etc\/ibfleet\/ibfleet-routes)$/m, `${'0'.repeat(64)}$1`),
      /ibfleet-routes/,
    ],
    [
      'a sysctl not set',
      (o: string) => o.replace(/(@@ibfleet sysctl ib0\n(?:.*\n)*?)rp_filter=2/, '$1rp_filter=1'),
      /rp_filter/,
    ],
  ])('fails verification with %s though the probe before the change saw it right', (_name, edit, why) => {
    const output = edit(closingOutput(deployed));
    expect(output).not.toBe(closingOutput(deployed));
    const check = verify(output);
    expect(check.ok).toBe(false);
    expect(check.ok ? '' : check.message).toMatch(why);
  });

  it('takes the tools from the opening probe, never assumes them: with none read, verification fails', () => {
    expect(verify(closingOutput(deployed), readProbe('')).ok).toBe(false);
  });
});

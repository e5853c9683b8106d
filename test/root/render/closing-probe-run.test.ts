/**
 * The probe closing a change (ProbeOptions.closing), run for real in a throw-away network namespace
 * (needs root): after the routing program changed the host's rules, routes and sysctls, its facts,
 * with what it leaves out taken from the probe before the change, are those of a whole probe of
 * the host as the change left it. Its rendering and the verification it feeds:
 * test/plan/closing-probe.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { readChangeOutput, readProbe } from '../../../src/plan/change-output.js';
import { AFTER_MARK, afterProbe } from '../../../src/render/apply-script.js';
import { renderProbeScript } from '../../../src/render/probe-script.js';
import { withHostFunctions } from '../../../src/script/host-functions.js';
import { writeRoutesProgram } from '../../helpers/routes-program.js';
import { hostOf, loadFixtureFleet, loadFixturePlaybook } from '../../fixtures/fixtures.js';
import { useFabrics, type Fabric } from '../../helpers/netns.js';

const CAN_RUN = process.getuid?.() === 0;
if (!CAN_RUN)
  console.warn('NOTE: test/root/render/closing-probe-run.test.ts skipped: it needs root (network namespaces)');
const seeds = loadFixtureFleet('seeds.yaml');
const playbook = loadFixturePlaybook();
const host = hostOf(seeds, 34);
const { work, createFor, runScript: run } = useFabrics('ibfleet-closing-');

describe.runIf(CAN_RUN)('the probe closing a change, run for real in a network namespace', () => {
  /** A script's output in the namespace host; it must exit 0. */
  const runScript = (lab: Fabric, script: string) => {
    const ran = run(lab, script);
    expect(ran.status, ran.stderr).toBe(0);
    return ran.stdout;
  };

  it('reads again all a change altered: with the opening probe merged, the facts of a whole probe after it', () => {
    const lab = createFor(host);
    const opening = readProbe(runScript(lab, renderProbeScript(host, seeds)));
    expect(opening.complete).toBe(true);

    // The change: rules, table routes and sysctls of both NICs.
    expect(lab.exec(['sh', writeRoutesProgram(work, playbook, host, seeds)]).status).toBe(0);

    const closing = runScript(
      lab,
      withHostFunctions(
        ['set -u', 'export LC_ALL=C PATH=/usr/sbin:/usr/bin:/sbin:/bin', afterProbe(host, seeds)].join('\n'),
      ),
    );
    // What no change alters, it did not read.
    expect(closing).not.toMatch(/^@@ibfleet (uid|os|tools|in-the-way)$/m);
    expect(closing.startsWith(`${AFTER_MARK}\n`)).toBe(true);
    const { after } = readChangeOutput(closing, opening);
    const whole = readProbe(runScript(lab, renderProbeScript(host, seeds, { managerEvidence: false, fabric: false })));
    expect(after.rules).not.toEqual(opening.rules);
    expect(after.tools.has('sha256sum')).toBe(true);
    // The first lines of ibfleet's files it does not read: they only say why a file differs.
    expect({ ...after, contents: whole.contents }).toEqual(whole);
  });
});

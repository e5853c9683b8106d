/**
 * The run log's view of a change script (filesApart): each file the change writes is taken out of
 * the printf that carries it, a marker in its place, and given apart — so the log writes the
 * routing program once a run, not once a host. Nothing else of the script changes.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { readProbe } from '../../src/plan/change-output.js';
import { planDeploy } from '../../src/plan/host-plan.js';
import { renderApplyScript } from '../../src/render/apply-script.js';
import { filesApart } from '../../src/render/write-files.js';
import { ROUTES_PROGRAM } from '../../src/script/routes-program.js';
import { shellQuote } from '../../src/script/shell.js';
import { hostOf, loadFixtureFleet, loadFixturePlaybook } from '../fixtures/fixtures.js';

const seeds = loadFixtureFleet('seeds.yaml');
const playbook = loadFixturePlaybook();
const boot = readProbe(readFileSync(new URL('../fixtures/probe/netplan-boot.txt', import.meta.url), 'utf8'));

function change(id: number) {
  const host = hostOf(seeds, id);
  const plan = planDeploy(host, seeds, playbook, boot);
  return { plan, script: renderApplyScript(host, seeds, plan, 'run-1') };
}

describe('a change script with its files apart', () => {
  it('gives each file written, in order, and the script with a marker where its content was — the rest unchanged', () => {
    const { plan, script } = change(34);
    const shown = filesApart(script, plan.write);
    expect(plan.write.length).toBeGreaterThan(2);
    expect(shown.files.map((f) => f.path)).toEqual(plan.write.map((f) => f.path));
    expect(shown.files.map((f) => f.content)).toEqual(plan.write.map((f) => f.content));
    expect(shown.files.find((f) => f.path === '/etc/ibfleet/ibfleet-routes')?.mode).toBe('0755');
    // Each marker put back as the quoted content it stands for gives the script that was sent.
    let back = shown.script;
    for (const f of shown.files)
      back = back.replace(`[the content of ${f.path}, shown apart below]`, () => shellQuote(f.content));
    expect(back).toBe(script);
    expect(shown.script.length).toBeLessThan(script.length / 2);
  });

  it("the routing program apart is the repository's file, the same on every host", () => {
    const { plan, script } = change(34);
    const program = filesApart(script, plan.write).files.find((f) => f.path === '/etc/ibfleet/ibfleet-routes');
    expect(program?.content).toBe(ROUTES_PROGRAM);
  });

  it('leaves a script alone where a file is not behind a printf of it: no file given, nothing marked', () => {
    const { plan, script } = change(34);
    const routes = plan.write.find((f) => f.path === '/etc/ibfleet/routes.conf')!;
    // The content as another word of the script (a comment quoting it), not as printf's: kept.
    const quoted = shellQuote(routes.content);
    const other = `# ${quoted}\necho done\n`;
    expect(filesApart(other, [routes])).toEqual({ script: other, files: [] });
    expect(filesApart(script, [])).toEqual({ script, files: [] });
  });
});

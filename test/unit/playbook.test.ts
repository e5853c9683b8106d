import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ConfigError, formatProblem } from '../../src/errors.js';
import { loadPlaybook, type Playbook } from '../../src/playbook/playbook.js';
import { CHANGE_KINDS, kindOrder, PLAYBOOK_ORDER, STEP_NAMES, STEPS } from '../../src/steps/registry.js';

const names = (p: Playbook) => p.steps.map((s) => s.module.name);
const paramsOf = (p: Playbook, name: string) =>
  p.steps.find((s) => s.module.name === name)?.params as Record<string, unknown> | undefined;

const FILE = 'playbooks/mine.yaml';
const yaml = (...lines: string[]) => `${lines.join('\n')}\n`;

function problemsOf(text: string): string[] {
  try {
    loadPlaybook(text, FILE);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems.map(formatProblem);
    throw error;
  }
  throw new Error('the playbook was accepted');
}

describe('the default playbook, playbooks/dual-ib-routing.yaml', () => {
  const text = readFileSync(new URL('../../playbooks/dual-ib-routing.yaml', import.meta.url), 'utf8');
  const playbook = loadPlaybook(text, 'playbooks/dual-ib-routing.yaml');

  it('runs links, policy-routing, fabric-sysctl, neigh-table, persist, verify-routes and fabric-health, in that order', () => {
    expect(playbook.name).toBe('dual-ib-routing');
    expect(names(playbook)).toEqual([
      'links',
      'policy-routing',
      'fabric-sysctl',
      'neigh-table',
      'persist',
      'verify-routes',
      'fabric-health',
    ]);
    expect(paramsOf(playbook, 'persist')).toEqual({ mode: 'hook', repairEvery: 30, monitor: [] });
  });

  it('gives the order change summaries tell the steps in (PLAYBOOK_ORDER), the native playbook too', () => {
    expect(names(playbook)).toEqual(PLAYBOOK_ORDER);
    const native = readFileSync(new URL('../../playbooks/dual-ib-routing-native.yaml', import.meta.url), 'utf8');
    expect(names(loadPlaybook(native, 'playbooks/dual-ib-routing-native.yaml'))).toEqual(PLAYBOOK_ORDER);
  });

  it('removes the main-table subnet routes, as the seeds do', () => {
    expect(paramsOf(playbook, 'policy-routing')).toEqual({ mainRoutes: 'remove' });
  });

  it('sets arp_ignore=2, arp_announce=2, rp_filter=2 (loose) and accept_local=1 per fabric interface', () => {
    expect(paramsOf(playbook, 'fabric-sysctl')).toEqual({
      arp_ignore: 2,
      arp_announce: 2,
      rp_filter: 2,
      accept_local: 1,
    });
  });
});

describe('the kinds of change, in the order summaries tell them', () => {
  it("the fix first, then the files, each in the steps' order and as each step lists its kinds", () => {
    expect([...CHANGE_KINDS.keys()]).toEqual([
      ...['link-profile', 'link-address', 'link-setting', 'roce-mode'],
      ...['rule', 'table-route', 'main-route', 'old-rule', 'old-table'],
      'sysctl',
      'nm-profile',
      'script',
      ...['links-file', 'links-record', 'record', 'sysctl-file'],
      ...['hook', 'networkd-conf', 'netplan-file', 'timer', 'monitor'],
      'file',
    ]);
  });

  it('follows the step order it is given: persist ahead of policy-routing tells its hook ahead of the record', () => {
    const order = ['persist', 'policy-routing', 'fabric-sysctl'];
    const kinds = kindOrder(STEPS, order).map((k) => k.kind);
    expect(kinds.slice(0, 6)).toEqual(['nm-profile', 'rule', 'table-route', 'main-route', 'old-rule', 'old-table']);
    expect(kinds.indexOf('hook')).toBeLessThan(kinds.indexOf('record'));
    expect(kinds.indexOf('record')).toBeLessThan(kinds.indexOf('sysctl-file'));
    // Steps the order leaves out come after the others; the engine's script heads the files, a file no step claims ends them.
    expect(kinds.indexOf('sysctl')).toBeLessThan(kinds.indexOf('link-profile'));
    expect(kinds.filter((k) => k === 'sysctl-file')).toHaveLength(1);
    expect(kinds.at(-1)).toBe('file');
  });
});

describe('steps and their parameters', () => {
  it('a step without parameters takes its documented defaults', () => {
    const playbook = loadPlaybook(yaml('name: p', 'steps:', '  - policy-routing', '  - fabric-sysctl'), FILE);
    expect(paramsOf(playbook, 'policy-routing')).toEqual({ mainRoutes: 'remove' });
    expect(paramsOf(playbook, 'fabric-sysctl')).toEqual({
      arp_ignore: 2,
      arp_announce: 2,
      rp_filter: 2,
      accept_local: 1,
    });
  });

  it('a step written with an empty parameter map takes its defaults too', () => {
    const playbook = loadPlaybook(yaml('name: p', 'steps:', '  - policy-routing:', '  - fabric-sysctl: {}'), FILE);
    expect(paramsOf(playbook, 'policy-routing')?.mainRoutes).toBe('remove');
    expect(paramsOf(playbook, 'fabric-sysctl')?.rp_filter).toBe(2);
  });

  it('given parameters override the defaults one by one', () => {
    const playbook = loadPlaybook(
      yaml('name: p', 'steps:', '  - policy-routing: { mainRoutes: keep }', '  - fabric-sysctl: { rp_filter: 1 }'),
      FILE,
    );
    expect(paramsOf(playbook, 'policy-routing')).toEqual({ mainRoutes: 'keep' });
    expect(paramsOf(playbook, 'fabric-sysctl')).toEqual({
      arp_ignore: 2,
      arp_announce: 2,
      rp_filter: 1,
      accept_local: 1,
    });
  });

  it('without fabric-sysctl, persist or verify-routes, those parts are off', () => {
    const playbook = loadPlaybook(
      yaml('name: routes-only', 'description: just the tables', 'steps:', '  - policy-routing'),
      FILE,
    );
    expect(names(playbook)).toEqual(['policy-routing']);
    expect(playbook).toMatchObject({ name: 'routes-only', file: FILE });
  });

  it('knows exactly the seven built-in steps', () => {
    expect(STEP_NAMES).toEqual([
      'policy-routing',
      'fabric-sysctl',
      'neigh-table',
      'persist',
      'verify-routes',
      'fabric-health',
      'links',
    ]);
  });
});

const KNOWN = 'known steps: policy-routing, fabric-sysctl, neigh-table, persist, verify-routes';

describe('a bad playbook is refused with file:line:col and what is allowed', () => {
  it.each(
    [
      {
        name: 'an unknown step',
        text: yaml('name: p', 'steps:', '  - policy-routing', '  - reboot'),
        says: [`${FILE}:4:5: steps[1]: unknown step "reboot"`, KNOWN],
      },
      {
        name: 'mainRoutes other than remove or keep',
        text: yaml('name: p', 'steps:', '  - policy-routing:', '      mainRoutes: delete'),
        says: [`${FILE}:4:19: steps[0].policy-routing.mainRoutes = "delete"`, 'remove', 'keep'],
      },
      {
        name: 'a misspelt parameter',
        text: yaml('name: p', 'steps:', '  - policy-routing:', '      mainroutes: keep'),
        says: [
          `${FILE}:4:7: steps[0].policy-routing.mainroutes: unknown key "mainroutes"; did you mean "mainRoutes"?`,
          'allowed here: mainRoutes',
        ],
      },
      {
        name: 'a misspelt step',
        text: yaml('name: p', 'steps:', '  - policy-routng'),
        says: [`${FILE}:3:5: steps[0]: unknown step "policy-routng"; did you mean "policy-routing"?`, KNOWN],
      },
      {
        name: 'rp_filter out of range',
        text: yaml('name: p', 'steps:', '  - policy-routing', '  - fabric-sysctl:', '      rp_filter: 3'),
        says: [`${FILE}:5:18: steps[1].fabric-sysctl.rp_filter = 3`, 'rp_filter is 0..2'],
      },
      {
        name: 'accept_local out of range',
        text: yaml('name: p', 'steps:', '  - policy-routing', '  - fabric-sysctl: { accept_local: 2 }'),
        says: [`${FILE}:4:36: steps[1].fabric-sysctl.accept_local = 2`, 'accept_local is 0..1'],
      },
      {
        name: 'a sysctl value given as a string',
        text: yaml('name: p', 'steps:', '  - policy-routing', '  - fabric-sysctl:', '      arp_ignore: "2"'),
        says: [`${FILE}:5:19: steps[1].fabric-sysctl.arp_ignore = "2"`, 'whole number 0..8'],
      },
      {
        name: 'an unknown sysctl',
        text: yaml('name: p', 'steps:', '  - policy-routing', '  - fabric-sysctl:', '      forwarding: 1'),
        says: [
          `${FILE}:5:7: steps[1].fabric-sysctl.forwarding: unknown key`,
          'allowed here: arp_ignore, arp_announce, rp_filter, accept_local',
        ],
      },
      {
        name: 'parameters for a step that takes none',
        text: yaml('name: p', 'steps:', '  - policy-routing', '  - verify-routes:', '      strict: true'),
        says: [`${FILE}:5:7: steps[1].verify-routes.strict: unknown key "strict"`, 'nothing may be set here'],
      },
      {
        name: 'an unknown persist parameter',
        text: yaml('name: p', 'steps:', '  - policy-routing', '  - persist:', '      manager: netplan'),
        says: [`${FILE}:5:7: steps[1].persist.manager: unknown key "manager"`, 'allowed here: mode, repairEvery'],
      },
      {
        name: 'a repair interval systemd would run too often',
        text: yaml('name: p', 'steps:', '  - policy-routing', '  - persist:', '      repairEvery: 2'),
        says: [`${FILE}:5:20: steps[1].persist.repairEvery`, '0 (no timer) or 5..3600 seconds'],
      },
      // Whole numbers are plain decimal digits, as in the inventory: 0x1e is not taken for 30.
      {
        name: 'repairEvery 0x1e (YAML: 30)',
        text: yaml('name: p', 'steps:', '  - policy-routing', '  - persist:', '      repairEvery: 0x1e'),
        says: [
          `${FILE}:5:20: steps[1].persist.repairEvery = 0x1e is not written in decimal (YAML reads it as 30)`,
          'write 30 if that is what you mean',
        ],
      },
      {
        name: 'a sysctl value 1e0 (YAML: the float 1)',
        text: yaml('name: p', 'steps:', '  - policy-routing', '  - fabric-sysctl: { rp_filter: 1e0 }'),
        says: [`${FILE}:4:33: steps[1].fabric-sysctl.rp_filter = 1e0 is not written in decimal (YAML reads it as 1)`],
      },
      {
        name: 'a sysctl value +2',
        text: yaml('name: p', 'steps:', '  - policy-routing', '  - fabric-sysctl:', '      arp_ignore: +2'),
        says: [`${FILE}:5:19: steps[1].fabric-sysctl.arp_ignore = +2 is not written in decimal (YAML reads it as 2)`],
      },
      // A P_Key is hex by nature: pkey 8002 is decimal 8002 = 0x1f42 to YAML, never the 0x8002 meant.
      {
        name: 'a P_Key written without 0x',
        text: yaml('name: p', 'steps:', '  - policy-routing', '  - links: { pkey: 8002 }'),
        says: [
          `${FILE}:4:20: steps[1].links.pkey = 8002 is decimal 8002 = 0x1f42`,
          'a P_Key is written in hex: 0x8002',
        ],
      },
      {
        name: 'a P_Key given as decimal text',
        text: yaml('name: p', 'steps:', '  - policy-routing', '  - links: { pkey: "32770" }'),
        says: [
          `${FILE}:4:20: steps[1].links.pkey = 32770 is decimal 32770 = 0x8002`,
          'a P_Key is written in hex: 0x8002',
        ],
      },
      ...['1e3', '0x7d0', '0o3720', '2044.0'].map((mtu) => ({
        name: `links' mtu ${mtu}`,
        text: yaml('name: p', 'steps:', '  - policy-routing', `  - links: { mtu: ${mtu} }`),
        says: [`${FILE}:4:19: steps[1].links.mtu = ${mtu} is not written in decimal`],
      })),
      {
        name: 'a step listed twice',
        text: yaml('name: p', 'steps:', '  - policy-routing', '  - persist', '  - persist'),
        says: [`${FILE}:5:5: steps[2]: step persist appears twice`, 'each step runs once'],
      },
      {
        name: 'no policy-routing step',
        text: yaml('name: p', 'steps:', '  - persist'),
        says: [`${FILE}:2:1: the playbook has no policy-routing step`],
      },
      {
        name: 'a list item that is not a step',
        text: yaml('name: p', 'steps:', '  - [a, b]'),
        says: [`${FILE}:3:5: steps[0] is not a step`, KNOWN],
      },
      {
        name: 'two steps in one list item',
        text: yaml('name: p', 'steps:', '  - policy-routing: {}', '    persist: {}'),
        says: [`${FILE}:3:5: steps[0] is not a step`],
      },
      {
        name: 'steps written as a map',
        text: yaml('name: p', 'steps:', '  policy-routing: {}'),
        says: [`${FILE}:2:1: steps is required: a list of built-in steps`, KNOWN],
      },
      { name: 'no steps', text: yaml('name: p'), says: [`${FILE}:1:1: steps is required`] },
      {
        name: 'no name',
        text: yaml('steps:', '  - policy-routing'),
        says: [`${FILE}:1:1: name is required`, 'dual-ib-routing'],
      },
      {
        name: 'a name that is not a lower-case word',
        text: yaml('name: Dual IB', 'steps:', '  - policy-routing'),
        says: [`${FILE}:1:7: name = "Dual IB" is not a playbook name`, 'a-z, 0-9, _ and -'],
      },
      {
        name: 'a misspelt top-level key',
        text: yaml('name: p', 'stpes:', '  - policy-routing'),
        says: [`${FILE}:2:1: unknown key "stpes"; did you mean "steps"?`],
      },
      {
        name: 'an unknown top-level key',
        text: yaml('name: p', 'hosts: all', 'steps:', '  - policy-routing'),
        says: [`${FILE}:2:1: unknown key "hosts"`, 'allowed here: name, description, steps'],
      },
      {
        name: 'malformed YAML',
        text: yaml('name: p', 'steps:', '  - policy-routing', ' - persist'),
        says: [`${FILE}:4:1: invalid YAML`],
      },
      { name: 'an empty file', text: '', says: [`${FILE}:1:1: a playbook is a YAML map with name and steps`] },
    ].map((c) => [c.name, c] as const),
  )('%s', (_, { text, says }) => {
    const [first] = problemsOf(text);
    for (const words of says) expect(first).toContain(words);
  });
});

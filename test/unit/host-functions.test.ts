/**
 * The scripts ibfleet sends take their shell functions from the repository's host/ files
 * (src/script/host-functions.ts): a script gets the definition of every function it calls, and of
 * those they call, once each, and nothing else.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CONTENT_PREFIX } from '../../src/facts/probe-format.js';
import { parseNmLinks } from '../../src/steps/links/facts.js';
import { readProbe } from '../../src/plan/change-output.js';
import { planDeploy } from '../../src/plan/host-plan.js';
import { planRestore } from '../../src/plan/restore.js';
import { rollbackLines } from '../../src/plan/rollback.js';
import { renderApplyScript, renderRollbackScript } from '../../src/render/apply-script.js';
import { renderProbeScript } from '../../src/render/probe-script.js';
import { sentShell } from '../../src/script/sent-shell.js';
import { renderRestoreScript } from '../../src/render/restore-script.js';
import { renderSettleProbe } from '../../src/render/settle-script.js';
import { renderCapabilityScript } from '../../src/render/verify-scripts.js';
import { hostOf, loadFixtureFleet, loadFixturePlaybook } from '../fixtures/fixtures.js';
import { definitionsFor, functionsOf, HOST_FUNCTIONS, withHostFunctions } from '../../src/script/host-functions.js';

const fleet = loadFixtureFleet('seeds.yaml');
const host = hostOf(fleet, 34);
const playbook = loadFixturePlaybook();
const probed = readProbe(readFileSync(new URL('../fixtures/probe/netplan-hook-deployed.txt', import.meta.url), 'utf8'));

const defined = (text: string) => [...text.matchAll(/^([a-z_]+)\(\) \{/gm)].map((m) => m[1]);

describe('host functions', () => {
  it('reads a file: each function with the comment above it, one-line ones too; sent without the comment but for directives', () => {
    const file = [
      '# a file',
      '',
      '# one: says one',
      'one() {',
      '\t# kept: inside the body',
      '\techo 1',
      '}',
      '# two: says two',
      '# shellcheck disable=SC2034',
      'two() { echo 2; }',
      'x=1',
    ].join('\n');
    expect(functionsOf(file, 'f.sh')).toEqual([
      {
        name: 'one',
        text: '# one: says one\none() {\n\t# kept: inside the body\n\techo 1\n}',
        sent: 'one() {\n\t# kept: inside the body\n\techo 1\n}',
      },
      {
        name: 'two',
        text: '# two: says two\n# shellcheck disable=SC2034\ntwo() { echo 2; }',
        sent: '# shellcheck disable=SC2034\ntwo() { echo 2; }',
      },
    ]);
  });

  it('refuses a function that never closes', () => {
    expect(() => functionsOf('one() {\n\techo 1\n', 'f.sh')).toThrow(/f\.sh: function one has no closing line/);
  });

  it("the steps' functions and the routing program's shared helpers are there, and no other of its own", () => {
    for (const name of [
      'await_address',
      'tell',
      'new_keyfile',
      'await_routing',
      'hand_over',
      'del_rules',
      'systemd_runs',
    ])
      expect(HOST_FUNCTIONS.has(name), name).toBe(true);
    for (const name of ['nic', 'configure', 'say', 'drift']) expect(HOST_FUNCTIONS.has(name), name).toBe(false);
  });

  it("the probe's functions print a file's lines behind the probe's content prefix", () => {
    expect(CONTENT_PREFIX).toBe('|');
    expect(HOST_FUNCTIONS.get('links_source')!.text).toContain("printf '|%s\\n'");
    // rd_section queues its file for the probe's reader (host/sent/probe.sh), awk or the shell.
    expect(HOST_FUNCTIONS.get('rd_section')!.text).toContain('rd_later "L$2" "@@ibfleet $1" "$3"');
    expect(sentShell('probe')).toContain('print "|" l');
    expect(sentShell('probe')).toContain('printf \'|%s\\n\' "$l"');
  });

  it("a script gets what it calls and what that calls, once, in the files' order", () => {
    expect(defined(definitionsFor('hand_over ib0 10.0.0.1 101 || status=1\nhand_over ib1 10.0.0.2 102'))).toEqual([
      'hand_over',
      'del_rules',
    ]);
    expect(defined(definitionsFor('if systemd_runs; then :; fi\n! systemd_runs || sd=1'))).toEqual(['systemd_runs']);
  });

  it('a name in a comment, in a word or in a file the script writes is no call', () => {
    expect(definitionsFor('# tell the manager\necho told; x=await_addresses\nprintf %s "nic ib0"')).toBe('');
    expect(withHostFunctions('echo nothing')).toBe('echo nothing');
  });

  it('a script sends the definitions without the comments above them; the files and the ansible form keep them', () => {
    const header = HOST_FUNCTIONS.get('del_rules')!.text.split('\n')[0]!;
    expect(header).toMatch(/^# del_rules /);
    const sent = renderRollbackScript(host, fleet, rollbackLines(host, fleet, probed), 'r');
    expect(defined(sent)).toContain('del_rules');
    expect(sent).toContain(HOST_FUNCTIONS.get('del_rules')!.sent);
    expect(sent).not.toContain(header);
    expect(HOST_FUNCTIONS.get('del_rules')!.sent).toMatch(/^del_rules\(\) \{/);
    expect(definitionsFor('del_rules from 10.0.0.1')).toContain(header);
    expect(definitionsFor('del_rules from 10.0.0.1', 'sent')).not.toContain('#');
  });

  it.each([
    ['probe', () => renderProbeScript(host, fleet)],
    ['deploy', () => renderApplyScript(host, fleet, planDeploy(host, fleet, playbook, probed))],
    ['rollback', () => renderRollbackScript(host, fleet, rollbackLines(host, fleet, probed), 'r')],
    ['restore', () => renderRestoreScript(host, fleet, planRestore(host, fleet, probed, [], ''), 'r')],
    ['settle', () => renderSettleProbe(host, fleet, 'r', 5)],
    ['capabilities', () => renderCapabilityScript(host, fleet)],
  ])('the %s script defines every host function it calls', (_, render) => {
    const script = render();
    const calls = [...HOST_FUNCTIONS.keys()].filter((name) =>
      new RegExp(`^[^#\\n]*(^|[\\s;&|(!{])${name}(?=[\\s;)]|$)`, 'm').test(script),
    );
    expect(calls.length).toBeGreaterThan(0);
    for (const name of calls) expect(defined(script), name).toContain(name);
  });
});

/**
 * The steps' waits share one poll (poll_until) and one view of the rules (rules_flat). Run here with
 * `ip` and `sleep` stubbed: a wait that times out looks exactly its bound of times (0.2 s between)
 * and says what it always said; a wait that sees what it waits for returns.
 */
describe('the waits', () => {
  const stubs = mkdtempSync(join(tmpdir(), 'ibfleet-waits-'));
  afterAll(() => rmSync(stubs, { recursive: true, force: true }));
  const stub = (name: string, text: string) => {
    writeFileSync(join(stubs, name), `#!/bin/sh\n${text}\n`);
    chmodSync(join(stubs, name), 0o755);
  };
  // What the kernel holds comes from the environment: RULE (a line of `ip -4 rule show`), ROUTE,
  // STATIC (the table route is systemd-networkd's, `proto static`), ADDR, UP.
  stub(
    'ip',
    [
      'case "$*" in',
      '"-4 rule show") printf \'0:\\tfrom all lookup local\\n%s\\n\' "$RULE" ;;',
      '"-4 route show table 101") [ -z "$ROUTE" ] || echo "172.16.0.0/16 dev ib0 scope link " ;;',
      '"-4 route show table 101 proto static dev ib0") [ -z "$STATIC" ] || echo "172.16.0.0/16 scope link src 172.16.34.1 " ;;',
      '"-4 -o addr show dev ib0") [ -z "$ADDR" ] || echo "4: ib0    inet 172.16.34.1/16 brd 172.16.255.255 scope global ib0" ;;',
      '"-o link show dev ib0") [ -z "$UP" ] || echo "4: ib0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 2044" ;;',
      'esac',
    ].join('\n'),
  );
  stub('sleep', 'echo "$1" >>"$SLEPT"');

  const run = (call: string, kernel: Record<string, string>) => {
    const slept = join(stubs, 'slept');
    writeFileSync(slept, '');
    const result = spawnSync('sh', ['-c', withHostFunctions(call)], {
      encoding: 'utf8',
      env: {
        PATH: `${stubs}:/usr/bin:/bin`,
        SLEPT: slept,
        RULE: '',
        ROUTE: '',
        STATIC: '',
        ADDR: '',
        UP: '',
        ...kernel,
      },
    });
    const sleeps = readFileSync(slept, 'utf8').split('\n').filter(Boolean);
    return { status: result.status, stderr: result.stderr, sleeps: sleeps.length, each: new Set(sleeps) };
  };
  const networkdRule = '1001:\tfrom 172.16.34.1 lookup 101 proto static ';
  const args = 'ib0 172.16.34.1 101 1001';

  it('a wait gets poll_until and rules_flat with its own look', () => {
    expect(defined(definitionsFor(`await_routing ${args}`))).toEqual([
      'await_routing',
      'routing_held',
      'poll_until',
      'rules_flat',
    ]);
    expect(defined(definitionsFor('await_address ib0 172.16.34.1'))).toEqual([
      'await_address',
      'address_up',
      'poll_until',
    ]);
  });

  it.each([
    [
      'await_address ib0 172.16.34.1',
      {},
      150,
      'ibfleet: ib0: the network manager did not put 172.16.34.1 on it within 30 s',
    ],
    [
      `await_routing ${args}`,
      { ADDR: '1', ROUTE: '1' },
      100,
      'ibfleet: ib0: the network manager did not put the rule, table 101 and address 172.16.34.1 in place within 20 s',
    ],
    [
      `await_gone ${args}`,
      { RULE: networkdRule, ADDR: '1' },
      100,
      "ibfleet: ib0: systemd-networkd did not finish configuring it without ibfleet's netplan file within 20 s",
    ],
    // networkd 247 tags no rule `proto static` and keeps it: its table route says it has not reconfigured the NIC yet.
    [
      `await_gone ${args}`,
      { RULE: '1001:\tfrom 172.16.34.1 lookup 101', STATIC: '1', ADDR: '1' },
      100,
      "ibfleet: ib0: systemd-networkd did not finish configuring it without ibfleet's netplan file within 20 s",
    ],
    [
      `await_rule_gone ${args}`,
      { RULE: networkdRule },
      100,
      "ibfleet: ib0: systemd-networkd did not take its rule and table route away without ibfleet's netplan file within 20 s",
    ],
    [
      `await_rule_gone ${args}`,
      { STATIC: '1' },
      100,
      "ibfleet: ib0: systemd-networkd did not take its rule and table route away without ibfleet's netplan file within 20 s",
    ],
  ])('%s times out after its bound of looks, 0.2 s apart, with its message', (call, kernel, looks, message) => {
    const out = run(call, kernel);
    expect(out).toMatchObject({ status: 1, stderr: `${message}\n`, sleeps: looks });
    expect([...out.each]).toEqual(['0.2']);
  });

  it.each([
    ['await_address ib0 172.16.34.1', { ADDR: '1', UP: '1' }, 0],
    // Seen twice in a row: one pause between the two looks.
    [`await_routing ${args}`, { RULE: '1001:\tfrom 172.16.34.1 lookup 101', ROUTE: '1', ADDR: '1' }, 1],
    [`await_routing ${args}`, { RULE: networkdRule, ROUTE: '1', ADDR: '1' }, 1],
    [`await_gone ${args}`, { ADDR: '1' }, 0],
    // The rule networkd 247 leaves behind (no `proto`) is not waited for: the hook's program takes it as its own.
    [`await_gone ${args}`, { RULE: '1001:\tfrom 172.16.34.1 lookup 101', ROUTE: '1', ADDR: '1' }, 0],
    [`await_rule_gone ${args}`, {}, 0],
  ])('%s returns once it sees what it waits for', (call, kernel, sleeps) => {
    expect(run(call, kernel)).toMatchObject({ status: 0, stderr: '', sleeps });
  });
});

describe('netplan_reload: networkd told of ibfleet’s netplan file', () => {
  const stubs = mkdtempSync(join(tmpdir(), 'ibfleet-netplan-reload-'));
  afterAll(() => rmSync(stubs, { recursive: true, force: true }));
  // A networkctl as networkd answers: each NIC's .network file before the reload (BEFORE_ib0, …;
  // `unmanaged FILE`: the file networkd 247 goes on naming for a NIC it no longer manages) and after
  // it (AFTER_ib0, …) — networkd switching only after LAG looks at the status since the reload
  // returned, as it does once the kernel answered it; RELOAD=fail where it has no reload. Every
  // call is logged; sleep returns at once.
  writeFileSync(
    join(stubs, 'networkctl'),
    [
      '#!/bin/sh',
      'echo "networkctl $*" >>"$CALLS"',
      'case "$1" in',
      'reload) [ "$RELOAD" != fail ] || exit 1; echo 0 >"$RELOADED" ;;',
      'status) looks=-1; [ ! -e "$RELOADED" ] || { looks=$(cat "$RELOADED"); echo $((looks + 1)) >"$RELOADED"; }',
      '  if [ "$looks" -ge "${LAG:-0}" ]; then eval "f=\\$AFTER_$2"; else eval "f=\\$BEFORE_$2"; fi',
      '  case "$f" in "unmanaged "* | n/a) s="off (unmanaged)" ;; *) s="routable (configured)" ;; esac',
      '  printf "   Link File: /usr/lib/systemd/network/99-default.link\\n Network File: %s\\n         State: %s\\n" "${f#unmanaged }" "$s" ;;',
      'esac',
    ].join('\n'),
  );
  chmodSync(join(stubs, 'networkctl'), 0o755);
  writeFileSync(join(stubs, 'sleep'), '#!/bin/sh\n');
  chmodSync(join(stubs, 'sleep'), 0o755);

  const run = (files: Record<string, string>, reload = 'ok', lag = 0) => {
    const calls = join(stubs, 'calls');
    const reloaded = join(stubs, 'reloaded');
    writeFileSync(calls, '');
    rmSync(reloaded, { force: true });
    const result = spawnSync(
      'sh',
      ['-c', withHostFunctions('status=0\nnetplan_reload ib0 ib1; echo "rc $? status $status"')],
      {
        encoding: 'utf8',
        env: {
          PATH: `${stubs}:/usr/bin:/bin`,
          CALLS: calls,
          RELOADED: reloaded,
          RELOAD: reload,
          LAG: String(lag),
          ...files,
        },
      },
    );
    const told = readFileSync(calls, 'utf8')
      .split('\n')
      .filter((l) => l !== '' && !l.startsWith('networkctl status'));
    return { out: result.stdout.trim(), told };
  };
  const NETPLAN = (nic: string) => `/run/systemd/network/10-netplan-${nic}.network`;

  it('NICs the reload switched to netplan’s file (fresh ones) are not reconfigured: that would drop and re-add their addresses', () => {
    expect(run({ BEFORE_ib0: 'n/a', BEFORE_ib1: 'n/a', AFTER_ib0: NETPLAN('ib0'), AFTER_ib1: NETPLAN('ib1') })).toEqual(
      { out: 'ibfleet: networkctl reload\nrc 0 status 0', told: ['networkctl reload'] },
    );
  });

  it('networkd switching the fresh NICs well after the reload returned: the change waits for it, and reconfigures neither', () => {
    // The old look took the file networkd still named (n/a) for a NIC the reload left alone, and its
    // reconfigure had networkd configure ib0 and ib1 a second time, dropping their addresses under the routing.
    const fresh = { BEFORE_ib0: 'n/a', BEFORE_ib1: 'n/a', AFTER_ib0: NETPLAN('ib0'), AFTER_ib1: NETPLAN('ib1') };
    const out = run(fresh, 'ok', 3);
    expect(out).toEqual({ out: 'ibfleet: networkctl reload\nrc 0 status 0', told: ['networkctl reload'] });
  });

  it('networkd 247 naming the file of a NIC it no longer manages (after a rollback): the reload switches it, not reconfigured', () => {
    const stale = {
      BEFORE_ib0: `unmanaged ${NETPLAN('ib0')}`,
      BEFORE_ib1: `unmanaged ${NETPLAN('ib1')}`,
      AFTER_ib0: NETPLAN('ib0'),
      AFTER_ib1: NETPLAN('ib1'),
    };
    expect(run(stale, 'ok', 2)).toEqual({
      out: 'ibfleet: networkctl reload\nrc 0 status 0',
      told: ['networkctl reload'],
    });
  });

  it('a NIC networkd does not switch within the bound of looks (another file matches it first) is reconfigured, as before', () => {
    expect(run({ BEFORE_ib0: 'n/a', BEFORE_ib1: 'n/a', AFTER_ib0: NETPLAN('ib0'), AFTER_ib1: 'n/a' })).toEqual({
      out: 'ibfleet: networkctl reload, networkctl reconfigure ib1\nrc 0 status 0',
      told: ['networkctl reload', 'networkctl reconfigure ib1'],
    });
  });

  it('a NIC whose file stayed the same (new contents) is reconfigured, alone', () => {
    expect(
      run({ BEFORE_ib0: 'n/a', BEFORE_ib1: NETPLAN('ib1'), AFTER_ib0: NETPLAN('ib0'), AFTER_ib1: NETPLAN('ib1') }),
    ).toEqual({
      out: 'ibfleet: networkctl reload, networkctl reconfigure ib1\nrc 0 status 0',
      told: ['networkctl reload', 'networkctl reconfigure ib1'],
    });
  });

  it('no reload (networkd before 244): returns 1, having told nothing more', () => {
    expect(run({ BEFORE_ib0: 'n/a', BEFORE_ib1: 'n/a' }, 'fail')).toEqual({
      out: 'rc 1 status 0',
      told: ['networkctl reload'],
    });
  });
});

/**
 * links_nm against an nmcli as NetworkManager 1.10 (Ubuntu 18.04) answers: it has no FILENAME
 * column (1.12 added it) and refuses the whole listing for it, and no match setting (1.14). The
 * profiles are still read, by uuid; none is told in memory only.
 */
describe('links_nm: the profiles, from the oldest nmcli too', () => {
  const stubs = mkdtempSync(join(tmpdir(), 'ibfleet-links-nm-'));
  afterAll(() => rmSync(stubs, { recursive: true, force: true }));
  writeFileSync(
    join(stubs, 'nmcli'),
    [
      '#!/bin/sh',
      'case "$*" in',
      '*FILENAME*) [ "$NM" = 1.10 ] && { echo "Error: invalid field \'FILENAME\'; allowed fields: NAME,UUID,TYPE,TIMESTAMP" >&2; exit 2; }',
      '  printf "%s:/etc/NetworkManager/system-connections/ib0.nmconnection\\n%s:/run/NetworkManager/system-connections/ib1.nmconnection\\n" "$U0" "$U1" ;;',
      '"-t -f UUID connection show") printf "%s\\n%s\\n" "$U0" "$U1" ;;',
      '*match.interface-name*) [ "$NM" = 1.10 ] && { echo "Error: invalid field \'match\'" >&2; exit 2; }; printf "connection.uuid:%s\\nconnection.interface-name:ib0\\nmatch.interface-name:\\n\\nconnection.uuid:%s\\nconnection.interface-name:ib1\\nmatch.interface-name:\\n" "$U0" "$U1" ;;',
      '*connection.uuid*) printf "connection.uuid:%s\\nconnection.interface-name:ib0\\n\\nconnection.uuid:%s\\nconnection.interface-name:ib1\\n" "$U0" "$U1" ;;',
      'esac',
    ].join('\n'),
  );
  chmodSync(join(stubs, 'nmcli'), 0o755);
  const U0 = '11111111-2222-4333-8444-555555555555';
  const U1 = '66666666-2222-4333-8444-555555555555';

  const run = (nm: string) => {
    // The function as sent, its look for a running NetworkManager pointed at a directory that is there.
    const script = withHostFunctions(
      's() { printf \'@@ibfleet %s\\n\' "$*"; }\nlinks_nm connection.uuid,connection.interface-name,match.interface-name connection.uuid,connection.interface-name',
    ).replace('[ -d /run/NetworkManager ]', `[ -d ${stubs} ]`);
    const result = spawnSync('sh', ['-c', script], {
      encoding: 'utf8',
      env: { PATH: `${stubs}:/usr/bin:/bin`, NM: nm, U0, U1 },
    });
    const lines = result.stdout.split('\n');
    return parseNmLinks(lines.slice(lines.indexOf('@@ibfleet links nm') + 1)).map((p) => [p.uuid, p.iface, p.volatile]);
  };

  it('NetworkManager 1.12+: every profile, with which are in memory only (their file under /run)', () => {
    expect(run('1.52')).toEqual([
      [U0, 'ib0', false],
      [U1, 'ib1', true],
    ]);
  });

  it('NetworkManager 1.10, whose nmcli has no FILENAME column: every profile all the same', () => {
    expect(run('1.10')).toEqual([
      [U0, 'ib0', false],
      [U1, 'ib1', false],
    ]);
  });
});

/**
 * netplan_ipoib_mode against a netplan and a networkctl as each release answers: `netplan info`
 * lists the `infiniband` feature from 0.105, `networkctl --version` names systemd's version.
 */
describe('netplan_ipoib_mode: an IPoIB mode only where netplan and networkd set one', () => {
  const stubs = mkdtempSync(join(tmpdir(), 'ibfleet-netplan-mode-'));
  afterAll(() => rmSync(stubs, { recursive: true, force: true }));
  writeFileSync(
    join(stubs, 'netplan'),
    '#!/bin/sh\n[ "$1" = info ] || exit 2\nprintf \'netplan.io:\\n  website: "https://netplan.io/"\\n  features:\\n\'\nfor f in $FEATURES; do echo "  - $f"; done\n',
  );
  writeFileSync(
    join(stubs, 'networkctl'),
    '#!/bin/sh\n[ "$1" = --version ] && printf "systemd %s\\n+PAM +AUDIT\\n" "$SYSTEMD"\n',
  );
  chmodSync(join(stubs, 'netplan'), 0o755);
  chmodSync(join(stubs, 'networkctl'), 0o755);
  const run = (features: string, systemd: string) => {
    const result = spawnSync('sh', ['-c', withHostFunctions('netplan_ipoib_mode; echo "rc $?"')], {
      encoding: 'utf8',
      env: { PATH: `${stubs}:/usr/bin:/bin`, FEATURES: features, SYSTEMD: systemd },
    });
    return { out: result.stdout.trim(), err: result.stderr.trim() };
  };
  const OLD = 'dhcp-use-domains ipv6-mtu modems generated-supplicant';
  const NEW = `${OLD} infiniband regdom`;

  it('netplan 0.105+ with systemd 250+ (Debian 12, 13; Ubuntu 24.04)', () => {
    expect(run(NEW, '252 (252.39-1~deb12u1)')).toEqual({ out: 'rc 0', err: '' });
    expect(run(NEW, '257 (257.13-1~deb13u1)')).toEqual({ out: 'rc 0', err: '' });
  });

  it('netplan before 0.105 (Debian 11, Ubuntu 18.04 and 20.04): refused, saying why', () => {
    expect(run(OLD, '247 (247.3-7+deb11u6)')).toEqual({
      out: 'rc 1',
      err: "ibfleet: this host's netplan has no infiniband-mode (it came with netplan 0.105), so it cannot set an IPoIB mode; leave mode out of the links settings for this host; nothing was changed",
    });
  });

  it('netplan 0.105+ on systemd before 250 (Ubuntu 22.04: netplan 0.106, systemd 249): refused, saying why', () => {
    expect(run(NEW, '249 (249.11-0ubuntu3.12)')).toEqual({
      out: 'rc 1',
      err: "ibfleet: this host's systemd-networkd 249 ignores netplan's infiniband-mode (networkd's [IPoIB] Mode= came with systemd 250), so it cannot set an IPoIB mode; leave mode out of the links settings for this host; nothing was changed",
    });
  });
});

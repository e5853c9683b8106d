import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../src/errors.js';
import { planLab } from '../../src/lab/plan.js';
import { renderMountScript } from '../../src/lab/scripts.js';
import { rootsDirFrom } from '../../src/lab/roots.js';
import {
  formatVersions,
  parseSuiteAssignments,
  parseVersions,
  renderRootBuildScript,
  SHOWN_PACKAGES,
  suiteRoot,
  suiteVersionsFile,
} from '../../src/lab/suites.js';
import { emulationLabel, renderHostView } from '../../src/lab/emulation.js';
import { seedsFleet } from './fleet.js';

describe('lab up --suite', () => {
  it.each([
    [['trixie'], { all: 'trixie', hosts: [] }],
    [['16=bullseye'], { hosts: [[16, 'bullseye']] }],
    [['16=trixie'], { hosts: [[16, 'trixie']] }],
    [
      ['bookworm', '34-35=trixie', '35=bullseye'],
      {
        all: 'bookworm',
        hosts: [
          [34, 'trixie'],
          [35, 'bullseye'],
        ],
      },
    ],
  ])('%j reads as %j', (values, expected) => {
    const parsed = parseSuiteAssignments(values);
    expect({ ...(parsed.all ? { all: parsed.all } : {}), hosts: [...parsed.hosts] }).toEqual({
      ...expected,
      hosts: expected.hosts,
    });
  });

  it.each([
    ['sid', '--suite sid: "sid" is not a suite the lab builds; use one of bullseye, bookworm, trixie'],
    ['16=Trixie', '--suite 16=Trixie: "Trixie" is not a suite the lab builds; use one of bullseye, bookworm, trixie'],
    ['=trixie', '--suite "=trixie": write SUITE or HOSTS=SUITE, e.g. --suite trixie or --suite 16=bullseye'],
    ['16=', '--suite "16=": write SUITE or HOSTS=SUITE, e.g. --suite trixie or --suite 16=bullseye'],
    ['x=trixie', '--suite "x": lab hosts are host numbers and ranges (16,34,40-47), 1..254'],
  ])('refuses %j: %s', (value, message) => {
    expect(() => parseSuiteAssignments([value])).toThrow(new UsageError(message));
  });

  it("puts each host on its suite, the others on the machine's own /usr, and names where the roots are", () => {
    const plan = planLab({
      fleet: seedsFleet(),
      hosts: [16, 34, 40],
      suites: { all: 'bookworm', hosts: new Map([[16, 'trixie']]) },
      rootsDir: '/cache',
    });
    expect(plan.hosts.map((h) => [h.id, h.suite])).toEqual([
      [16, 'trixie'],
      [34, 'bookworm'],
      [40, 'bookworm'],
    ]);
    expect(plan.rootsDir).toBe('/cache');
    const own = planLab({ fleet: seedsFleet(), hosts: [16, 34] });
    expect(own.hosts.map((h) => h.suite)).toEqual([undefined, undefined]);
    expect(own.rootsDir).toBeUndefined();
  });

  it("enters a suite host by pivot_root into an overlay of the cached root, the machine's tree detached", () => {
    const plan = planLab({
      fleet: seedsFleet(),
      name: 't',
      hosts: [34],
      suites: { all: 'trixie' },
      rootsDir: '/cache',
    });
    const script = renderMountScript(plan, plan.hosts[0]!);
    expect(script).toContain(
      `-o "lowerdir=${suiteRoot('/cache', 'trixie')},upperdir=$up,workdir=/run/ibfleet-lab/t/hosts/34/work" "$R"`,
    );
    expect(script).toMatch(/pivot_root \. \.\numount -l \./);
    // The lab's systemctl lies over the suite's own, found after the pivot.
    expect(script.slice(script.indexOf('pivot_root'))).toContain(
      'mount --bind /run/ibfleet-lab-host/systemctl "$(readlink -f "$(command -v systemctl)")"',
    );
  });

  it("keeps the suite's own os-release and gives each host a machine-id of its own", () => {
    const plan = planLab({ fleet: seedsFleet(), name: 't', hosts: [16, 34], suites: { all: 'trixie' } });
    const views = plan.hosts.map((h) => renderHostView(plan, h, 'ssh-ed25519 AAAA lab'));
    const paths = views.map((v) => v.files.map((f) => f.path));
    expect(paths.every((p) => !p.includes('/etc/os-release') && p.includes('/etc/machine-id'))).toBe(true);
    const ids = views.map((v) => v.files.find((f) => f.path === '/etc/machine-id')!.content);
    expect(ids.every((id) => /^[0-9a-f]{32}\n$/.test(id))).toBe(true);
    expect(ids[0]).not.toBe(ids[1]);
    expect(emulationLabel('netplan', true, false, 'bullseye')).toBe(
      'Debian 11 (bullseye), netplan + networkd-dispatcher',
    );
  });

  it('builds a root under a lock, into a directory beside it, and renames it whole', () => {
    const script = renderRootBuildScript('/cache', 'trixie');
    expect(script).toContain('exec 9>/cache/.trixie.lock');
    expect(script).toContain(
      'mmdebstrap --variant=apt --include=openssh-server,iproute2,iputils-ping,network-manager,netplan.io,systemd,networkd-dispatcher,ifupdown,dbus,procps,sudo,python3 trixie /cache/.trixie.building/root',
    );
    expect(script.indexOf('flock 9')).toBeLessThan(script.indexOf('mmdebstrap'));
    expect(script).toMatch(/mv \/cache\/\.trixie\.building \/cache\/trixie\n/);
  });

  it('reads the versions dpkg recorded and shows them upstream-only', () => {
    const versions = parseVersions(
      'network-manager\t1.30.6-1+deb11u1\nsystemd\t247.3-7+deb11u8\nopenssh-server\t1:8.4p1-5+deb11u7\n$(evil)\tx\n',
    );
    expect(versions).toEqual({
      'network-manager': '1.30.6-1+deb11u1',
      systemd: '247.3-7+deb11u8',
      'openssh-server': '1:8.4p1-5+deb11u7',
    });
    expect(formatVersions(versions)).toBe('NM 1.30.6, systemd 247.3, openssh 8.4p1');
  });

  it.each([
    [undefined, '/var/cache/ibfleet-lab/roots'],
    ['/srv/roots/', '/srv/roots'],
  ])('keeps the roots in $IBFLEET_LAB_ROOTS=%j: %s', (value, dir) => {
    expect(rootsDirFrom(value === undefined ? {} : { IBFLEET_LAB_ROOTS: value })).toBe(dir);
  });

  it.each(['relative/dir', '/a b', '/x/../etc', '/x,upperdir=/'])('refuses $IBFLEET_LAB_ROOTS=%j', (value) => {
    expect(() => rootsDirFrom({ IBFLEET_LAB_ROOTS: value })).toThrow(UsageError);
  });
});

describe('building a root: two lab ups at once', () => {
  /** mmdebstrap stand-in: counts its runs, takes a while, and leaves a root with a dpkg status. */
  const FAKE_MMDEBSTRAP = `#!/bin/sh
for last; do :; done
echo run >>"$COUNT"
sleep 1
mkdir -p "$last/var/lib/dpkg"
for p in ${SHOWN_PACKAGES.map(([p]) => p).join(' ')}; do
	printf 'Package: %s\\nStatus: install ok installed\\nVersion: 1.0-1\\nArchitecture: amd64\\nMaintainer: x\\nDescription: x\\n\\n' "$p"
done >"$last/var/lib/dpkg/status"
`;

  it('build it once: the second waits on the lock, then finds it whole', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ibfleet-roots-'));
    try {
      mkdirSync(join(dir, 'bin'));
      writeFileSync(join(dir, 'bin/mmdebstrap'), FAKE_MMDEBSTRAP, { mode: 0o755 });
      const env = { PATH: `${join(dir, 'bin')}:/usr/sbin:/usr/bin:/sbin:/bin`, COUNT: join(dir, 'count') };
      const build = () =>
        new Promise<{ code: number | null; stderr: string }>((resolve) => {
          const child = spawn('sh', ['-euc', renderRootBuildScript(join(dir, 'roots'), 'trixie')], { env });
          let stderr = '';
          child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
          child.on('close', (code) => resolve({ code, stderr }));
        });
      const [a, b] = await Promise.all([build(), build()]);
      expect([a.code, b.code]).toEqual([0, 0]);
      expect(readFileSync(join(dir, 'count'), 'utf8')).toBe('run\n');
      expect(a.stderr + b.stderr).toContain('another lab up is building the trixie root; waiting for it');
      expect(parseVersions(readFileSync(suiteVersionsFile(join(dir, 'roots'), 'trixie'), 'utf8'))).toEqual(
        Object.fromEntries(SHOWN_PACKAGES.map(([p]) => [p, '1.0-1'])),
      );
      expect(readdirSync(join(dir, 'roots')).filter((f) => !f.endsWith('.lock'))).toEqual(['trixie']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

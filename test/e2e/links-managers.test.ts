/**
 * The links step against what the real managers keep besides ibfleet's own configuration, on
 * machines as they arrive (lab up --fresh): a NetworkManager profile bound to a NIC by its MAC
 * address is the one deploy changes (NetworkManager activates it at boot whatever else exists), a
 * boot keeps the address, rollback gives the profile its properties back; a netplan file that
 * matches a NIC by a name pattern refuses the host as one naming it does; a manager's command
 * that fails fails the host at once, in that command's own words, and the host is put back.
 *
 * And on the managers' other generations: NetworkManager 1.30 (Debian 11), whose nmcli gives a new
 * profile no uuid, and 1.52 (Debian 13) — from fresh through a boot to rollback, and a failing
 * nmcli in its own words there too.
 *
 * Lab: 70 and 71 NetworkManager, 72 netplan (this machine's own); 73 NetworkManager on bullseye,
 * 74 on trixie; 75 ifupdown — all fresh.
 */
import { describe, expect, it } from 'vitest';
import { labExec, labReboot, labRestartManager } from '../../src/lab/index.js';
import { ibfleet, json, statuses, type JsonRun } from '../helpers/cli.js';
import { IS_ROOT, noteIfNotRoot, testLab, useLab } from '../lab/helpers.js';

const LAB = testLab('e2e-links-managers');
const HOSTS = [70, 71, 72, 73, 74, 75];
/** How long a manager may take to bring the NICs up after a boot, on a loaded machine. */
const SETTLE_MS = 30_000;

noteIfNotRoot("test/e2e/links-managers.test.ts (links against the managers' own configuration)");

describe.skipIf(!IS_ROOT)("links: the managers' own configuration of a fresh NIC (needs root)", () => {
  const lab = useLab({
    name: LAB.name,
    mgmtSubnet: LAB.mgmtSubnet,
    hosts: HOSTS,
    managers: {
      70: 'networkmanager',
      71: 'networkmanager',
      72: 'netplan',
      73: 'networkmanager',
      74: 'networkmanager',
      75: 'ifupdown',
    },
    fresh: HOSTS,
    suites: { hosts: { 73: 'bullseye', 74: 'trixie' } },
  });

  const sh = async (id: number, script: string) => (await labExec(LAB.name, id, ['sh', '-c', script])).stdout.trim();
  const run = (...args: string[]) => ibfleet(['-i', lab().inventoryPath, ...args]);
  const status = async (hosts: string) => {
    const doc = json(await run('status', '--hosts', hosts, '--json'));
    return {
      ok: Object.values(statuses(doc)).every((s) => s === 'ok'),
      reasons: doc.hosts.flatMap((h) => h.reasons.map((r) => `${h.id}: ${r}`)),
    };
  };
  const untilOk = async (hosts: string) => {
    const deadline = Date.now() + SETTLE_MS;
    for (;;) {
      const s = await status(hosts);
      if (s.ok) return;
      if (Date.now() > deadline) expect(s.reasons, 'status').toEqual([]);
      await new Promise((r) => setTimeout(r, 500));
    }
  };
  const matrix = async (hosts: string) => {
    const doc = json<JsonRun>(await run('verify', '--hosts', hosts, '--json'));
    expect(doc.matrix!.filter((c) => !c.ok).map((c) => `${c.from.ip} → ${c.to.ip} (${c.method}): ${c.detail}`)).toEqual(
      [],
    );
    return doc.matrix!.length;
  };
  /** Addresses on the fabric NICs and NetworkManager's profiles: what a fresh host has of both. */
  const nicState = (id: number) =>
    sh(id, "ip -4 -o addr show | grep -E ' ib[01] ' || true; nmcli -t -f NAME,TYPE connection show | sort");

  it('a profile bound to ib0 by MAC address is the one deploy changes, not duplicated: a boot keeps the address, rollback its properties', async () => {
    // The address NetworkManager compares: the kernel's (`ip link`).
    const mac = (await sh(70, 'ip -o link show dev ib0')).match(/link\/ether (\S+)/)![1]!.toUpperCase();
    await sh(
      70,
      `nmcli connection add type ethernet con-name macbound 802-3-ethernet.mac-address ${mac} ipv4.method disabled ipv6.method ignore`,
    );
    const deployed = await run('deploy', '--hosts', '70,71', '--json');
    expect(
      json(deployed).hosts.map((h) => [h.id, h.status, h.error]),
      deployed.stderr,
    ).toEqual([
      [70, 'changed', null],
      [71, 'changed', null],
    ]);
    expect(await sh(70, 'nmcli -t -f NAME connection show | sort')).toBe('ibfleet-ib1\nmacbound');
    expect(await sh(70, 'nmcli -g ipv4.method,ipv4.addresses connection show macbound')).toBe('manual\n172.16.70.1/16');

    // At boot NetworkManager activates the profile bound to the NIC: it is the one that carries the address.
    expect((await labReboot(LAB.name, [70])).map((r) => r.ok)).toEqual([true]);
    await untilOk('70,71');
    expect(await sh(70, 'nmcli -g GENERAL.CONNECTION device show ib0')).toBe('macbound');
    expect(await matrix('70,71')).toBeGreaterThan(0);

    const rolled = json(await run('rollback', '--hosts', '70,71', '--json'));
    expect(rolled.hosts.map((h) => h.status)).toEqual(['changed', 'changed']);
    expect(await sh(70, 'nmcli -g ipv4.method,ipv4.addresses connection show macbound')).toBe('disabled');
    expect(await nicState(70)).toBe('macbound:802-3-ethernet');
    expect(await nicState(71)).toBe('');
  });

  it('a failing nmcli fails the host within seconds in its own words, and the host is put back', async () => {
    const before = await nicState(71);
    // NetworkManager cannot store a profile: its keyfile directory is a file.
    const dir = '/etc/NetworkManager/system-connections';
    await sh(71, `mv ${dir} ${dir}.away && touch ${dir}`);
    try {
      const started = Date.now();
      const result = await run('deploy', '--hosts', '71', '--json');
      const took = Date.now() - started;
      expect(result.code).toBe(1);
      const error = json(result).hosts[0]!.error ?? '';
      expect(error).toContain(
        "ib0: nmcli connection add (profile ibfleet-ib0) failed (exit 4): Error: Failed to add 'ibfleet-ib0' connection:",
      );
      // Not the probe's noise, nor a wait for addresses that cannot come.
      expect(error).not.toContain('Command failed');
      expect(error).toContain('rolled back: the host is as it was before this deploy');
      expect(took).toBeLessThan(15_000);
      expect(await nicState(71)).toBe(before);
    } finally {
      await sh(71, `rm -f ${dir} && mv ${dir}.away ${dir}`);
    }
  });

  it('a netplan file matching ib0 by a name pattern (ib[0]) refuses the host at plan, as one naming ib0 does: nothing changes', async () => {
    const state = () =>
      sh(
        72,
        "ip -o link show dev ib0 | grep -o '<[^>]*>'; ip -4 -o addr show dev ib0; ls /etc/netplan /etc/ibfleet 2>&1",
      );
    await sh(
      72,
      `printf 'network:\n  version: 2\n  ethernets:\n    fabric:\n      match:\n        name: "ib[0]"\n      dhcp4: false\n' >/etc/netplan/01-ib.yaml && chmod 600 /etc/netplan/01-ib.yaml`,
    );
    try {
      const before = await state();
      const started = Date.now();
      const result = await run('deploy', '--hosts', '72', '--json');
      expect(result.code).toBe(1);
      expect(json(result).hosts[0]!.error).toBe(
        'plan: ib0: /etc/netplan/01-ib.yaml configures it (ethernets.fabric, match name ib[0]) without 172.16.72.1/16; ibfleet does not edit that file: add the address there, or remove ib0 from it',
      );
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(await state()).toBe(before);
    } finally {
      await sh(72, 'rm -f /etc/netplan/01-ib.yaml');
    }
  });

  it("a failing ifup fails the host at once in its own words (an if-pre-up.d script's), and the host is put back", async () => {
    const state = () =>
      sh(75, "ip -4 -o addr show | grep -E ' ib[01] '; ls /etc/network/interfaces.d /etc/ibfleet 2>&1");
    await sh(
      75,
      'printf \'#!/bin/sh\\n[ "$IFACE" = ib0 ] || exit 0\\necho "ib0 is not to be configured here (site policy)" >&2\\nexit 1\\n\' >/etc/network/if-pre-up.d/zz-test && chmod 755 /etc/network/if-pre-up.d/zz-test',
    );
    try {
      const before = await state();
      const started = Date.now();
      const result = await run('deploy', '--hosts', '75', '--json');
      expect(result.code).toBe(1);
      const error = json(result).hosts[0]!.error ?? '';
      expect(error).toMatch(/ibfleet: ib0: ifup failed \(exit 1\): .*ib0 is not to be configured here \(site policy\)/);
      expect(Date.now() - started).toBeLessThan(15_000);
      expect(await state()).toBe(before);
    } finally {
      await sh(75, 'rm -f /etc/network/if-pre-up.d/zz-test');
    }
  });

  it('a change that fails after ifup brought the NICs up (an if-up.d script refusing ib1): put back with both links down again, as the fresh host had them (issue 29)', async () => {
    const links = () => sh(75, "ip -o link show | grep -oE ' ib[01]: <[^>]*>' | sort");
    await sh(
      75,
      'printf \'#!/bin/sh\\n[ "$IFACE" = ib1 ] || exit 0\\necho "ib1 is not to be used here (site policy)" >&2\\nexit 1\\n\' >/etc/network/if-up.d/zz-test && chmod 755 /etc/network/if-up.d/zz-test',
    );
    try {
      const before = await links();
      expect(before).not.toMatch(/[<,]UP[,>]/);
      const result = await run('deploy', '--hosts', '75', '--json');
      expect(result.code).toBe(1);
      expect(json(result).hosts[0]!.error).toMatch(
        /ibfleet: ib1: ifup failed \(exit 1\): .*ib1 is not to be used here/,
      );
      expect(await links()).toBe(before);
      expect(await sh(75, "ip -4 -o addr show | grep -cE ' ib[01] '; true")).toBe('0');
    } finally {
      await sh(75, 'rm -f /etc/network/if-up.d/zz-test');
    }
  });

  it('NICs an admin brought up without an address: a change that fails after ifup (ifdown first takes them down) and a rollback both leave them up, nothing left differing (issue 29)', async () => {
    const admin = () =>
      sh(
        75,
        'for i in ib0 ib1; do if ip -o link show dev "$i" up | grep -q .; then echo "$i up"; else echo "$i down"; fi; done',
      );
    await sh(
      75,
      'ip link set ib0 up && ip link set ib1 up && printf \'#!/bin/sh\\n[ "$IFACE" = ib1 ] || exit 0\\necho "ib1 is not to be used here (site policy)" >&2\\nexit 1\\n\' >/etc/network/if-up.d/zz-test && chmod 755 /etc/network/if-up.d/zz-test',
    );
    try {
      expect(await admin()).toBe('ib0 up\nib1 up');
      const failed = await run('deploy', '--hosts', '75', '--json');
      expect(failed.code).toBe(1);
      // Before: "rolled back, but these still differ from before: ib0 link: down …, before up …; ib1 link: down …".
      expect(json(failed).hosts[0]!.error).toMatch(
        /ibfleet: ib1: ifup failed \(exit 1\): .*ib1 is not to be used here.*; rolled back: the host is as it was before this deploy/,
      );
      expect(await admin()).toBe('ib0 up\nib1 up');

      await sh(75, 'rm -f /etc/network/if-up.d/zz-test');
      const deployed = json(await run('deploy', '--hosts', '75', '--json'));
      expect(deployed.hosts.map((h) => [h.status, h.error])).toEqual([['changed', null]]);
      const rolled = json(await run('rollback', '--hosts', '75', '--json'));
      expect(rolled.hosts.map((h) => [h.status, h.error])).toEqual([['changed', null]]);
      expect(await admin()).toBe('ib0 up\nib1 up');
      expect(await sh(75, "ip -4 -o addr show | grep -cE ' ib[01] '; true")).toBe('0');
    } finally {
      await sh(75, 'rm -f /etc/network/if-up.d/zz-test; ip link set ib0 down; ip link set ib1 down');
    }
  });

  it("a change that fails after networkd brought the NICs up (the routing script cannot read ib1's sysctl): put back with both links down again, the routing script's reason quoted (issue 29)", async () => {
    const links = () => sh(72, "ip -o link show | grep -oE ' ib[01]: <[^>]*>' | sort");
    const SYSCTL = '/proc/sys/net/ipv4/conf/ib1/accept_local';
    await sh(72, `mount --bind /dev/null ${SYSCTL}`);
    try {
      const before = await links();
      expect(before).not.toMatch(/[<,]UP[,>]/);
      const result = await run('deploy', '--hosts', '72', '--json');
      expect(result.code).toBe(1);
      expect(json(result).hosts[0]!.error).toMatch(
        /^apply: applying the change failed \(exit 1\): ibfleet-routes: ib1: cannot read \/proc\/sys\/net\/ipv4\/conf\/ib1\/accept_local; rolled back/,
      );
      expect(await links()).toBe(before);
      expect(await sh(72, "ip -4 -o addr show | grep -cE ' ib[01] '; true")).toBe('0');
    } finally {
      await sh(72, `umount ${SYSCTL}`);
    }
  });

  it("a host netplan file that netplan generate rejects: the host fails at once in netplan's words, not in its restore's, which fails on that file again; nothing changed (issue 29)", async () => {
    const state = () =>
      sh(
        72,
        "ip -o link show | grep -oE ' ib[01]: <[^>]*>' | sort; ip -4 -o addr show | grep -E ' ib[01] '; ls /etc/netplan",
      );
    await sh(
      72,
      "printf 'network:\\n  version: 2\\n  ethernets:\\n    mgmt9:\\n      addresses: [notanaddress]\\n' >/etc/netplan/02-bad.yaml && chmod 600 /etc/netplan/02-bad.yaml",
    );
    try {
      const before = await state();
      const result = await run('deploy', '--hosts', '72', '--json');
      expect(result.code).toBe(1);
      const error = json(result).hosts[0]!.error ?? '';
      // Before: "… failed (exit 1): ibfleet: netplan generate failed; …", the restore's line.
      expect(error).toMatch(
        /^apply: applying the change failed \(exit 1\): ibfleet: netplan generate with \/etc\/netplan\/50-ibfleet-links\.yaml among this host's netplan files failed; nothing was changed: .*\/etc\/netplan\/02-bad\.yaml:5:\d+: Error in network definition: .*notanaddress/,
      );
      expect(error).not.toContain('ibfleet: netplan generate failed');
      expect(await state()).toBe(before);
    } finally {
      await sh(72, 'rm -f /etc/netplan/02-bad.yaml');
    }
  });

  it('NetworkManager 1.30 (bullseye) and 1.52 (trixie), from fresh: the profiles under the uuids ibfleet derives, status ok, a boot, the matrix, rollback fresh', async () => {
    expect(await sh(73, 'nmcli --version')).toMatch(/version 1\.30\./);
    expect(await sh(74, 'nmcli --version')).toMatch(/version 1\.52\./);
    const deployed = await run('deploy', '--hosts', '73,74', '--json');
    expect(
      json(deployed).hosts.map((h) => [h.id, h.status, h.error]),
      deployed.stderr,
    ).toEqual([
      [73, 'changed', null],
      [74, 'changed', null],
    ]);
    for (const id of [73, 74]) {
      // The uuid the record keeps (and every later run looks for) is the profile's.
      const recorded = (
        await sh(id, "sed -n 's/^nic ib0 networkmanager \\([^ ]*\\) created.*/\\1/p' /etc/ibfleet/links")
      ).trim();
      expect(await sh(id, 'nmcli -g connection.uuid connection show ibfleet-ib0'), `host ${id}`).toBe(recorded);
    }
    expect((await status('73,74')).reasons).toEqual([]);
    expect((await labReboot(LAB.name, [73, 74])).map((r) => r.ok)).toEqual([true, true]);
    await untilOk('73,74');
    expect(await matrix('73,74')).toBeGreaterThan(0);
    expect(json(await run('rollback', '--hosts', '73,74', '--json')).hosts.map((h) => h.status)).toEqual([
      'changed',
      'changed',
    ]);
    for (const id of [73, 74])
      expect(
        await sh(
          id,
          'ip -4 -o addr show | grep -E " ib[01] "; nmcli -t -f NAME connection show; ls /etc/NetworkManager/system-connections',
        ),
        `host ${id}`,
      ).toBe('');
  });

  it('NetworkManager 1.30: a failing nmcli fails the host within seconds in its own words, and the keyfile ibfleet wrote goes with the restore', async () => {
    // NetworkManager told by its configuration to leave ib0 alone: it refuses to activate a profile there.
    await sh(
      73,
      "printf '[keyfile]\\nunmanaged-devices=interface-name:ib0\\n' >/etc/NetworkManager/conf.d/90-test.conf",
    );
    await labRestartManager(LAB.name, 73);
    const state = () =>
      sh(
        73,
        'ip -4 -o addr show | grep -E " ib[01] "; nmcli -t -f NAME connection show; ls /etc/NetworkManager/system-connections',
      );
    const before = await state();
    try {
      const started = Date.now();
      const result = await run('deploy', '--hosts', '73', '--json');
      const took = Date.now() - started;
      expect(result.code).toBe(1);
      const error = json(result).hosts[0]!.error ?? '';
      expect(error).toContain(
        'ib0: nmcli connection up (profile ibfleet-ib0) failed (exit 4): Error: Connection activation failed:',
      );
      expect(error).toContain('rolled back: the host is as it was before this deploy');
      expect(took).toBeLessThan(15_000);
      expect(await state()).toBe(before);
      expect(before).not.toMatch(/ibfleet/);
    } finally {
      await sh(73, 'rm -f /etc/NetworkManager/conf.d/90-test.conf');
      await labRestartManager(LAB.name, 73);
    }
  });
});

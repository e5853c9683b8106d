import { describe, expect, it } from 'vitest';
import { bootInvocations, ifupHookRuns, parseHookListing, runnableHooks, skipReason, type HookDirEntry } from '../../src/lab/hooks.js';
import { planLab } from '../../src/lab/plan.js';
import { seedsFleet } from './fleet.js';

const plan = planLab({ fleet: seedsFleet(), name: 'demo' });
const [h16, h34] = plan.hosts as [(typeof plan.hosts)[0], (typeof plan.hosts)[0]];
const entry = (over: Partial<HookDirEntry>): HookDirEntry => ({ name: '50-ibfleet-routes', uid: 0, gid: 0, mode: 0o755, type: 'f', ...over });

describe('which hook files a dispatcher runs', () => {
  it.each([
    ['netplan', {}, undefined],
    ['netplan', { mode: 0o644 }, 'not executable by its owner'],
    ['netplan', { uid: 1000 }, 'not owned by root'],
    ['netplan', { gid: 4 }, 'group is not root'],
    ['netplan', { mode: 0o775 }, 'writable by group or others'],
    ['netplan', { mode: 0o757 }, 'writable by group or others'],
    ['netplan', { type: 'd' }, 'not a regular file'],
    ['netplan', { type: 'l' }, 'not a regular file'],
    ['netplan', { name: 'x.dpkg-old' }, undefined],
    ['networkmanager', {}, undefined],
    ['networkmanager', { gid: 4 }, undefined],
    ['networkmanager', { mode: 0o4755 }, 'set-UID'],
    ['networkmanager', { name: 'x.dpkg-old' }, 'ignored name (hidden or package/editor leftover)'],
    ['networkmanager', { name: 'x~' }, 'ignored name (hidden or package/editor leftover)'],
    ['networkmanager', { mode: 0o700 }, undefined],
  ] as const)('%s, %o: %s', (manager, over, reason) => {
    expect(skipReason(manager, entry(over))).toBe(reason);
  });

  it('runs accepted scripts in byte order of their names', () => {
    const listing = parseHookListing('b\t0\t0\t755\tf\n50-x\t0\t0\t755\tf\nA\t0\t0\t755\tf\nno\t0\t0\t644\tf\npre-up.d\t0\t0\t755\td\n');
    expect(listing[0]).toEqual({ name: 'b', uid: 0, gid: 0, mode: 0o755, type: 'f' });
    expect(runnableHooks('networkmanager', listing)).toEqual(['50-x', 'A', 'b']);
  });
});

describe('the hook runs of a boot', () => {
  it('networkd-dispatcher: every routable.d script per routable interface, management first', () => {
    const calls = bootInvocations(plan, h34, ['50-ibfleet-routes']);
    expect(calls.map((c) => [c.event, c.script, c.args, c.env.IFACE, c.env.STATE])).toEqual([
      ['routable mgmt0', '/etc/networkd-dispatcher/routable.d/50-ibfleet-routes', [], 'mgmt0', 'routable'],
      ['routable ib0', '/etc/networkd-dispatcher/routable.d/50-ibfleet-routes', [], 'ib0', 'routable'],
      ['routable ib1', '/etc/networkd-dispatcher/routable.d/50-ibfleet-routes', [], 'ib1', 'routable'],
    ]);
    expect(calls[2]!.env).toMatchObject({ ADDR: '172.16.34.2', IP_ADDRS: '172.16.34.2', OperationalState: 'routable' });
    expect(calls[0]!.env.PATH).toContain('/usr/sbin');
  });

  it('NetworkManager: the hostname event, then "<iface> up" per device with DEVICE_IFACE', () => {
    const calls = bootInvocations(plan, h16, ['10-a', '50-ibfleet-routes']);
    expect(calls.map((c) => [c.script.split('/').pop(), ...c.args])).toEqual([
      ['10-a', 'none', 'hostname'],
      ['50-ibfleet-routes', 'none', 'hostname'],
      ['10-a', 'mgmt0', 'up'],
      ['50-ibfleet-routes', 'mgmt0', 'up'],
      ['10-a', 'ibs5f0', 'up'],
      ['50-ibfleet-routes', 'ibs5f0', 'up'],
      ['10-a', 'ibs5f1', 'up'],
      ['50-ibfleet-routes', 'ibs5f1', 'up'],
    ]);
    expect(calls[0]!.env).toMatchObject({ NM_DISPATCHER_ACTION: 'hostname' });
    expect(calls[0]!.env.DEVICE_IFACE).toBeUndefined();
    expect(calls[7]!.env).toMatchObject({ NM_DISPATCHER_ACTION: 'up', DEVICE_IFACE: 'ibs5f1', DEVICE_IP_IFACE: 'ibs5f1', CONNECTION_ID: 'ibs5f1', IP4_ADDRESS_0: '172.16.16.2/16 0.0.0.0' });
  });

  it('no scripts, no runs', () => {
    expect(bootInvocations(plan, h34, [])).toEqual([]);
  });

  it('reads which if-up.d scripts `ifup -a -v` ran, and for which IFACE', () => {
    // Captured from ifupdown 0.8.41 on Debian 12 (ib0 was already up, so only ib1 was configured).
    const output = [
      'run-parts --exit-on-error --verbose /etc/network/if-pre-up.d',
      '',
      'ifup: configuring interface ib1=ib1 (inet)',
      'run-parts --exit-on-error --verbose /etc/network/if-pre-up.d',
      'run-parts: executing /etc/network/if-pre-up.d/ignored',
      'ip addr add 172.16.40.2/255.255.0.0 broadcast 172.16.255.255 \t  dev ib1 label ib1',
      'ip link set dev ib1   up',
      '',
      'run-parts --exit-on-error --verbose /etc/network/if-up.d',
      'run-parts: executing /etc/network/if-up.d/a',
      'run-parts: executing /etc/network/if-up.d/b',
      'run-parts --exit-on-error --verbose /etc/network/if-up.d',
      'run-parts: executing /etc/network/if-up.d/a',
      'run-parts: executing /etc/network/if-up.d/b',
      '',
    ].join('\n');
    expect(ifupHookRuns(output)).toEqual([
      { script: '/etc/network/if-up.d/a', iface: 'ib1' },
      { script: '/etc/network/if-up.d/b', iface: 'ib1' },
      { script: '/etc/network/if-up.d/a', iface: '--all' },
      { script: '/etc/network/if-up.d/b', iface: '--all' },
    ]);
  });
});

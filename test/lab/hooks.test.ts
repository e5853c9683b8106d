import { describe, expect, it } from 'vitest';
import { ifupHookRuns, parseHookListing, runnableHooks, skipReason, type HookDirEntry } from '../../src/lab/hooks.js';

const entry = (over: Partial<HookDirEntry>): HookDirEntry => ({
  name: '50-ibfleet-routes',
  uid: 0,
  gid: 0,
  mode: 0o755,
  type: 'f',
  ...over,
});

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
    const listing = parseHookListing(
      'b\t0\t0\t755\tf\n50-x\t0\t0\t755\tf\nA\t0\t0\t755\tf\nno\t0\t0\t644\tf\npre-up.d\t0\t0\t755\td\n',
    );
    expect(listing[0]).toEqual({ name: 'b', uid: 0, gid: 0, mode: 0o755, type: 'f' });
    expect(runnableHooks('networkmanager', listing)).toEqual(['50-x', 'A', 'b']);
  });
});

describe('what ifup ran', () => {
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

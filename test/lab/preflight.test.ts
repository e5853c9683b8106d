import { describe, expect, it } from 'vitest';
import { UsageError } from '../../src/errors.js';
import { checkPreflight, preflightProblems, requireRoot, type PreflightProbe } from '../../src/lab/preflight.js';

function probe(over: { root?: boolean; missing?: string[]; overlay?: boolean } = {}): PreflightProbe {
  return {
    isRoot: () => over.root ?? true,
    findCommand: (name) => (over.missing?.includes(name) ? undefined : `/usr/sbin/${name}`),
    hasOverlayfs: () => over.overlay ?? true,
  };
}

describe('lab up preflight', () => {
  it("passes on a prepared machine and hands back sshd's absolute path", () => {
    expect(checkPreflight({ managers: ['ifupdown', 'netplan', 'networkmanager'] }, probe())).toEqual({
      sshd: '/usr/sbin/sshd',
    });
  });

  it('asks for root', () => {
    expect(preflightProblems({ managers: [] }, probe({ root: false }))).toEqual([
      'lab up needs root (it works with network namespaces and mounts): run it as root, e.g. sudo ibfleet lab up',
    ]);
  });

  it('names each missing tool with its package and the install command', () => {
    expect(preflightProblems({ managers: [] }, probe({ missing: ['sshd', 'ping'] }))).toEqual([
      'lab up needs sshd (openssh-server), ping (iputils-ping), not found; install with: apt-get install openssh-server iproute2 iputils-ping util-linux ifupdown network-manager netplan.io networkd-dispatcher dbus mmdebstrap (or: sudo scripts/setup)',
    ]);
  });

  it("asks for each manager's daemons only when a host of that manager is requested", () => {
    const missing = ['ifup', 'ifdown', 'NetworkManager', 'networkd-dispatcher', 'systemd-networkd'];
    expect(preflightProblems({ managers: [] }, probe({ missing }))).toEqual([]);
    expect(preflightProblems({ managers: ['ifupdown'] }, probe({ missing }))[0]).toMatch(
      /^lab up needs ifup \(ifupdown\), ifdown \(ifupdown\), not found/,
    );
    expect(preflightProblems({ managers: ['networkmanager'] }, probe({ missing }))[0]).toMatch(
      /^lab up needs NetworkManager \(network-manager\), not found/,
    );
    expect(preflightProblems({ managers: ['netplan'] }, probe({ missing }))[0]).toMatch(
      /^lab up needs systemd-networkd \(systemd\), networkd-dispatcher \(networkd-dispatcher\), not found/,
    );
  });

  it('reports every problem at once, as a usage error (exit 2)', () => {
    const attempt = () =>
      checkPreflight({ managers: [] }, probe({ root: false, missing: ['ip', 'nsenter'], overlay: false }));
    expect(attempt).toThrow(UsageError);
    expect(attempt).toThrow(/needs root[\s\S]*ip \(iproute2\), nsenter \(util-linux\)[\s\S]*overlayfs/);
  });

  it('down and reboot only need root', () => {
    expect(() => requireRoot('lab down', () => false)).toThrow(/lab down needs root/);
    expect(() => requireRoot('lab down', () => true)).not.toThrow();
  });
});

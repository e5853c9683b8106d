import { describe, expect, it } from 'vitest';
import { loadInventory } from '../../src/inventory/load.js';
import { expandTokens, parseJumpSpec, parseSshConfig, resolveSshTarget } from '../../src/runner/ssh-target.js';

const env = { home: '/home/ops', localUser: 'ops' };

function fleetWith(hostLine: string, extra = '') {
  return loadInventory(`fabric: { subnet: 172.16.0.0/16 }\n${extra}hosts:\n  34: ${hostLine}\n`, '/srv/inv/fleet.yaml');
}

describe('resolving where to connect', () => {
  it('uses OpenSSH defaults when nothing is configured: root, port 22, default identities', () => {
    const fleet = fleetWith('{ address: 10.0.0.34 }');
    const t = resolveSshTarget(fleet.hosts[0]!, fleet, undefined, env);
    expect(t).toMatchObject({ hostName: '10.0.0.34', port: 22, user: 'root', sudo: false, jumps: [] });
    expect(t.identityFiles).toEqual(['/home/ops/.ssh/id_ed25519', '/home/ops/.ssh/id_ecdsa', '/home/ops/.ssh/id_rsa']);
  });

  it('applies ~/.ssh/config for a host given by name: HostName, User, Port, IdentityFile with tokens', () => {
    const fleet = fleetWith('{ name: memserver34 }');
    const config = parseSshConfig(
      'Host memserver*\n  HostName %h.lab.example\n  User admin\n  Port 2222\n  IdentityFile ~/.ssh/lab_%r\n',
    );
    const t = resolveSshTarget(fleet.hosts[0]!, fleet, config, env);
    expect(t).toMatchObject({ hostName: 'memserver34.lab.example', user: 'admin', port: 2222, sudo: true });
    expect(t.identityFiles).toEqual(['/home/ops/.ssh/lab_admin']);
  });

  it('lets the inventory win over the config, as command-line options do in OpenSSH', () => {
    const fleet = fleetWith('{ name: memserver34, user: root, port: 22, identityFile: keys/lab }');
    const config = parseSshConfig('Host memserver34\n  User admin\n  Port 2222\n  IdentityFile ~/.ssh/other\n');
    const t = resolveSshTarget(fleet.hosts[0]!, fleet, config, env);
    expect(t).toMatchObject({ user: 'root', port: 22, sudo: false });
    expect(t.identityFiles).toEqual(['/srv/inv/keys/lab', '/home/ops/.ssh/other']);
  });

  it('honours an explicit sudo setting for a root login and IdentitiesOnly', () => {
    const fleet = fleetWith('{ address: 10.0.0.34, sudo: true }');
    const t = resolveSshTarget(fleet.hosts[0]!, fleet, parseSshConfig('Host *\n  IdentitiesOnly yes\n'), env);
    expect(t.sudo).toBe(true);
    expect(t.identitiesOnly).toBe(true);
  });

  it('resolves ProxyJump chains through the config, outermost first', () => {
    const fleet = fleetWith('{ name: memserver34 }');
    const config = parseSshConfig(
      [
        'Host memserver34',
        '  ProxyJump inner',
        'Host inner',
        '  HostName 10.1.0.1',
        '  ProxyJump ops@gw.example:2022',
        'Host gw.example',
        '  IdentityFile ~/.ssh/gw',
      ].join('\n'),
    );
    const t = resolveSshTarget(fleet.hosts[0]!, fleet, config, env);
    expect(t.jumps.map((j) => [j.user, j.hostName, j.port])).toEqual([
      ['ops', 'gw.example', 2022],
      ['root', '10.1.0.1', 22],
    ]);
    expect(t.jumps[0]!.identityFiles).toEqual(['/home/ops/.ssh/gw']);
  });

  it('refuses ProxyCommand and jump loops with a clear message', () => {
    const fleet = fleetWith('{ name: memserver34 }');
    expect(() =>
      resolveSshTarget(fleet.hosts[0]!, fleet, parseSshConfig('Host memserver34\n  ProxyCommand nc %h %p\n'), env),
    ).toThrow(/ProxyCommand.*ProxyJump/);
    expect(() =>
      resolveSshTarget(
        fleet.hosts[0]!,
        fleet,
        parseSshConfig('Host memserver34\n  ProxyJump a\nHost a\n  ProxyJump memserver34\n'),
        env,
      ),
    ).toThrow(/loops/);
  });

  it.each([
    ['host', { alias: 'host' }],
    ['user@host', { alias: 'host', user: 'user' }],
    ['user@host:2022', { alias: 'host', user: 'user', port: 2022 }],
    ['ssh://user@[fe80::1]:22', { alias: 'fe80::1', user: 'user', port: 22 }],
  ])('parses jump spec %s', (spec, expected) => {
    expect(parseJumpSpec(spec)).toEqual(expected);
  });

  it('expands %% %d %u %h %r %p and ~', () => {
    expect(expandTokens('~/k/%u-%r@%h:%p%%%d', { ...env, host: 'h', user: 'r', port: 2 })).toBe(
      '/home/ops/k/ops-r@h:2%/home/ops',
    );
  });
});

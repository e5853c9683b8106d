import { describe, expect, it } from 'vitest';
import { loadInventory } from '../../src/inventory/load.js';
import {
  EMULATED_OS,
  renderHostView,
  renderInterfaces,
  renderNetplanNetworkd,
  renderNmKeyfile,
  renderSshdConfig,
} from '../../src/lab/emulation.js';
import { renderKnownHosts, renderLabInventory } from '../../src/lab/lab-inventory.js';
import { planLab } from '../../src/lab/plan.js';
import { seedsFleet } from './fleet.js';

const plan = planLab({ fleet: seedsFleet(), name: 'demo', hosts: [16, 34, 40], managers: new Map([[40, 'ifupdown']]) });
const [h16, h34, h40] = plan.hosts as [(typeof plan.hosts)[0], (typeof plan.hosts)[0], (typeof plan.hosts)[0]];

describe('what each emulated host holds', () => {
  it('34 is an Ubuntu 18.04 server whose netplan hands the IPoIB NICs to networkd', () => {
    expect(renderNetplanNetworkd(plan, h34)).toMatchInlineSnapshot(`
      "# Ubuntu 18.04 server: netplan with the networkd renderer configures the IPoIB NICs.
      # Emulated by ibfleet 0.1.0 lab demo; removed by \`ibfleet lab down\`.
      network:
        version: 2
        renderer: networkd
        ethernets:
          mgmt0:
            addresses: [198.18.0.34/24]
          ib0:
            addresses: [172.16.34.1/16]
          ib1:
            addresses: [172.16.34.2/16]
      "
    `);
    const view = renderHostView(plan, h34, 'ssh-ed25519 AAAA lab');
    expect(view.files.find((f) => f.path === '/etc/os-release')!.content).toContain(
      'VERSION="18.04.6 LTS (Bionic Beaver)"',
    );
    expect(view.dirs.map((d) => d.path)).toEqual(expect.arrayContaining(['/etc/networkd-dispatcher/routable.d']));
    // The real daemons make their own runtime directories (networkd's must belong to systemd-network).
    expect(
      view.dirs.map((d) => d.path).filter((p) => p.startsWith('/run/systemd') || p.startsWith('/run/NetworkManager')),
    ).toEqual([]);
  });

  it('16 is an Ubuntu 20.04 desktop with NetworkManager keyfiles for its NICs', () => {
    expect(renderNmKeyfile(plan, h16, h16.nics[1]!)).toMatchInlineSnapshot(`
      "[connection]
      id=ibs5f1
      uuid=1c83b0bc-0c59-4f90-8d0c-fbd34ecfac37
      type=ethernet
      interface-name=ibs5f1
      permissions=

      [ethernet]
      mac-address-blacklist=

      [ipv4]
      address1=172.16.16.2/16
      dns-search=
      method=manual

      [ipv6]
      addr-gen-mode=stable-privacy
      dns-search=
      method=ignore

      [proxy]
      "
    `);
    const view = renderHostView(plan, h16, 'ssh-ed25519 AAAA lab');
    const keyfiles = view.files.filter((f) => f.path.startsWith('/etc/NetworkManager/system-connections/'));
    expect(keyfiles.map((f) => [f.path, f.mode])).toEqual([
      ['/etc/NetworkManager/system-connections/ibs5f0.nmconnection', 0o600],
      ['/etc/NetworkManager/system-connections/ibs5f1.nmconnection', 0o600],
    ]);
    expect(view.files.find((f) => f.path === '/etc/netplan/01-network-manager-all.yaml')!.content).toContain(
      'renderer: NetworkManager',
    );
    expect(view.dirs.map((d) => d.path)).toEqual(expect.arrayContaining(['/etc/NetworkManager/dispatcher.d']));
    // NetworkManager manages the fabric NICs only: the management link stays the lab's.
    expect(view.files.find((f) => f.path === '/etc/NetworkManager/conf.d/90-ibfleet-lab.conf')!.content).toContain(
      'unmanaged-devices=except:interface-name:ibs5f0;except:interface-name:ibs5f1\n',
    );
    expect(EMULATED_OS.networkmanager.osRelease).toContain('VERSION_CODENAME=focal');
  });

  it('40 is a Debian 12 host whose /etc/network/interfaces brings the NICs up with ifup', () => {
    expect(renderInterfaces(plan, h40)).toMatchInlineSnapshot(`
      "# interfaces(5) file used by ifup(8) and ifdown(8)
      # Debian 12: ifupdown configures the IPoIB NICs.
      # Emulated by ibfleet 0.1.0 lab demo; removed by \`ibfleet lab down\`.

      source /etc/network/interfaces.d/*

      auto lo
      iface lo inet loopback

      auto ib0
      iface ib0 inet static
      	address 172.16.40.1/16

      auto ib1
      iface ib1 inet static
      	address 172.16.40.2/16
      "
    `);
    const view = renderHostView(plan, h40, 'ssh-ed25519 AAAA lab');
    expect(view.dirs.map((d) => d.path)).toEqual(expect.arrayContaining(['/etc/network/if-up.d', '/run/network']));
    expect(
      view.dirs
        .map((d) => d.path)
        .filter((p) => p.includes('netplan') || p.includes('NetworkManager') || p.startsWith('/run/systemd')),
    ).toEqual([]);
  });

  it("runs sshd on the management address only, key-only, with room for the runner's channels", () => {
    const config = renderSshdConfig(plan, h34);
    for (const line of [
      'ListenAddress 198.18.0.34',
      'HostKey /etc/ssh/ssh_host_ed25519_key',
      'PidFile /run/sshd.pid',
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'PermitRootLogin prohibit-password',
      'UsePAM no',
      'LogLevel INFO',
      'MaxSessions 32',
      'Subsystem sftp internal-sftp',
    ]) {
      expect(config).toContain(`${line}\n`);
    }
  });

  it('authorizes exactly the lab key for root and names the host', () => {
    const view = renderHostView(plan, h16, 'ssh-ed25519 AAAAkey ibfleet-lab-demo');
    expect(view.files.find((f) => f.path === '/root/.ssh/authorized_keys')).toEqual({
      path: '/root/.ssh/authorized_keys',
      mode: 0o600,
      content: 'ssh-ed25519 AAAAkey ibfleet-lab-demo\n',
    });
    expect(view.files.find((f) => f.path === '/etc/hostname')!.content).toBe('cpuserver16\n');
    expect(view.dirs.find((d) => d.path === '/run/sshd')!.mode).toBe(0o755);
  });
});

describe('the lab inventory', () => {
  const text = renderLabInventory(plan);

  it('loads with loadInventory, pointing at the lab key and known_hosts, managers left to detection', () => {
    const fleet = loadInventory(text, '/run/ibfleet-lab/demo/inventory.yaml');
    expect(
      fleet.hosts.map((h) => [
        h.id,
        h.name,
        h.address,
        h.role,
        h.manager,
        h.user,
        h.nics.map((n) => n.iface).join(','),
      ]),
    ).toEqual([
      [16, 'cpuserver16', '198.18.0.16', 'cpu', 'auto', 'root', 'ibs5f0,ibs5f1'],
      [34, 'memserver34', '198.18.0.34', 'mem', 'auto', 'root', 'ib0,ib1'],
      [40, 'node40', '198.18.0.40', undefined, 'auto', 'root', 'ib0,ib1'],
    ]);
    expect(fleet.ssh).toEqual({
      knownHosts: '/run/ibfleet-lab/demo/known_hosts',
      identityFile: '/run/ibfleet-lab/demo/id_ed25519',
      config: undefined,
    });
    expect(fleet.pairs).toEqual([{ owner: 'alice', cpu: 16, mem: 34 }]);
    expect(fleet.fabric.tableBase).toBe(940);
  });

  it('reads like a hand-written inventory', () => {
    expect(text).toContain(
      '  16: {name: cpuserver16, address: 198.18.0.16, role: cpu, interfaces: [ibs5f0, ibs5f1]} # Ubuntu 20.04, NetworkManager\n',
    );
    expect(text).toContain('  - {owner: alice, cpu: 16, mem: 34}\n');
    expect(text).not.toMatch(/manager: (netplan|networkmanager|ifupdown)/);
  });

  it('lists one plain known_hosts line per host', () => {
    expect(renderKnownHosts([{ address: '198.18.0.16', publicKey: 'ssh-ed25519 AAAAC3Nza root@cpuserver16\n' }])).toBe(
      '198.18.0.16 ssh-ed25519 AAAAC3Nza\n',
    );
  });
});

/** What `ibfleet render` shows for one host: its files for a known manager, or every candidate hook for `auto`. */
import { MANAGERS, type Fleet, type Host, type Manager } from '../inventory/model.js';
import type { Playbook } from '../playbook/playbook.js';
import { renderHostFiles, type RenderedFile } from './files.js';
import { NM_NATIVE_SINCE, nmModifyCommand, nmReapplyCommand, nmRoutingRule } from './native-nm.js';
import { NETPLAN_FILE_PATH } from './paths.js';

/** Commands deploy runs besides writing files (native persistence on NetworkManager hosts). */
export interface RenderedCommands {
  readonly title: string;
  readonly lines: readonly string[];
}

export interface HostRender {
  readonly host: Host;
  /** The managers whose hook is included: one, or all three when the inventory says auto. */
  readonly managers: readonly string[];
  readonly files: readonly RenderedFile[];
  /** Commands deploy runs on the host besides the files (nmcli for native persistence). */
  readonly commands: readonly RenderedCommands[];
  /** What only the host can decide, said with the render (native persistence's conditions). */
  readonly notes: readonly string[];
}

/** The placeholder render shows for what only the host's probe knows. */
function profilePlaceholder(iface: string): string {
  return `<uuid of the active connection of ${iface}>`;
}

function nmCommands(host: Host): RenderedCommands {
  return {
    title: `nmcli (NetworkManager ${NM_NATIVE_SINCE}+: each fabric NIC's active connection profile)`,
    lines: host.nics.flatMap((nic) => [
      nmModifyCommand({ iface: nic.iface, uuid: profilePlaceholder(nic.iface), name: nic.iface, routeTable: nic.table, removeRules: [], addRules: [nmRoutingRule(nic)] }),
      nmReapplyCommand(nic.iface),
    ]),
  };
}

function nativeRender(host: Host, fleet: Fleet, playbook: Playbook, manager: Manager): Pick<HostRender, 'files' | 'commands' | 'notes'> {
  switch (manager) {
    case 'networkmanager':
      return {
        files: renderHostFiles(host, fleet, playbook, manager, { kind: 'networkmanager' }),
        commands: [nmCommands(host)],
        notes: [
          `native persistence: deploy sets each fabric NIC's active connection profile with the nmcli commands below (the uuid found on the host; ibfleet deploy --dry-run --show-scripts shows them exactly). NetworkManager before ${NM_NATIVE_SINCE} gets the hook files instead (ibfleet render with the hook playbook shows them).`,
        ],
      };
    case 'netplan':
      return {
        files: renderHostFiles(host, fleet, playbook, manager, { kind: 'netplan', devices: [] }),
        commands: [],
        notes: [
          `native persistence: ${NETPLAN_FILE_PATH} as shown when the host's netplan defines each NIC as ethernets.<interface>; deploy writes the device type and id the host's own netplan file gives each NIC (deploy --dry-run --show-scripts shows it), or the hook files where netplan does not define a NIC by itself. netplan cannot keep the kernel's subnet route out of main: it stays, and the rules come first.`,
        ],
      };
    case 'ifupdown':
      return { files: renderHostFiles(host, fleet, playbook, manager), commands: [], notes: ["native persistence on ifupdown is ifupdown's own if-up.d hook: the files are the hook playbook's"] };
  }
}

export function renderForDisplay(host: Host, fleet: Fleet, playbook: Playbook): HostRender {
  const native = playbook.persist && playbook.persistMode === 'native';
  if (host.manager !== 'auto') {
    if (native) return { host, managers: [host.manager], ...nativeRender(host, fleet, playbook, host.manager) };
    return { host, managers: [host.manager], files: renderHostFiles(host, fleet, playbook, host.manager), commands: [], notes: [] };
  }
  const common = renderHostFiles(host, fleet, playbook, 'netplan').filter((f) => f.role !== 'hook');
  const hooks = MANAGERS.flatMap((m) => renderHostFiles(host, fleet, playbook, m).filter((f) => f.role === 'hook'));
  const files = [common[0]!, ...hooks, ...common.slice(1)];
  if (!native) return { host, managers: [...MANAGERS], files, commands: [], notes: [] };
  const netplan = nativeRender(host, fleet, playbook, 'netplan');
  return {
    host,
    managers: [...MANAGERS],
    files: [...files.filter((f) => f.role !== 'sysctl' && f.role !== 'record'), ...netplan.files],
    commands: [nmCommands(host)],
    notes: ['native persistence with manager auto: deploy detects the manager; NetworkManager hosts get the nmcli commands, netplan hosts the netplan file, ifupdown hosts (and older NetworkManager) the routing script, hook and repair timer'],
  };
}

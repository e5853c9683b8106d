/** Everything one host receives, as data: path, mode and exact content. Pure and reproducible. */
import type { Fleet, Host, Manager } from '../inventory/model.js';
import type { Playbook } from '../playbook/playbook.js';
import { hookPath, renderHook } from './hooks.js';
import { renderNetplanFile, type NetplanDevice } from './native-netplan.js';
import { renderOwnedRecord } from './owned-record.js';
import { NETPLAN_FILE_PATH, OWNED_PATH, REPAIR_DROP_IN_PATH, REPAIR_SERVICE_PATH, REPAIR_TIMER_PATH, ROUTING_SCRIPT_PATH, SYSCTL_PATH } from './paths.js';
import { renderRepairDropIn, renderRepairService, renderRepairTimer } from './repair.js';
import { renderRoutingScript } from './routing-script.js';
import { renderSysctlConf } from './sysctl.js';

export interface RenderedFile {
  /** Absolute path on the host. */
  readonly path: string;
  /** Octal permission bits, e.g. 0o755; owner is always root:root. */
  readonly mode: number;
  readonly content: string;
  /** What the file is for, one line. */
  readonly role: 'routing-script' | 'hook' | 'repair' | 'sysctl' | 'netplan' | 'record';
  /** For hooks: which manager runs it. */
  readonly manager?: Manager;
}

/**
 * Native persistence (the playbook's `persist: { mode: native }`, where the host allows it): the
 * routing lives in the manager's configuration, so no routing script, hook or repair timer is
 * installed — on netplan hosts ibfleet's netplan file, for the NICs' devices as the host defines them.
 */
export type NativeFiles = { readonly kind: 'networkmanager' } | { readonly kind: 'netplan'; readonly devices: readonly NetplanDevice[] };

/** What the host itself decides about its files, as its probe found it; without a probe (render), a host as most are. */
export interface HostTraits {
  /** Whether systemd runs the host: without it there is no timer to install (render/systemd.ts). */
  readonly systemd: boolean;
}

export const TYPICAL_HOST: HostTraits = { systemd: true };

export function renderHostFiles(host: Host, fleet: Fleet, playbook: Playbook, manager: Manager, native?: NativeFiles, traits: HostTraits = TYPICAL_HOST): RenderedFile[] {
  if (native) {
    const files: RenderedFile[] = [];
    if (native.kind === 'netplan') files.push({ path: NETPLAN_FILE_PATH, mode: 0o600, content: renderNetplanFile(host, fleet, playbook, native.devices), role: 'netplan', manager });
    if (playbook.fabricSysctl) files.push({ path: SYSCTL_PATH, mode: 0o644, content: renderSysctlConf(host, fleet, playbook, playbook.fabricSysctl, 'native'), role: 'sysctl' });
    return [...files, ownedRecordFile(host, fleet, playbook)];
  }
  const files: RenderedFile[] = [{ path: ROUTING_SCRIPT_PATH, mode: 0o755, content: renderRoutingScript(host, fleet, playbook), role: 'routing-script' }];
  if (playbook.persist) files.push({ path: hookPath(manager), mode: 0o755, content: renderHook(manager, host, playbook), role: 'hook', manager });
  if (playbook.persist && playbook.repairEvery > 0 && traits.systemd) {
    files.push(
      { path: REPAIR_SERVICE_PATH, mode: 0o644, content: renderRepairService(host, playbook), role: 'repair' },
      { path: REPAIR_TIMER_PATH, mode: 0o644, content: renderRepairTimer(host, playbook), role: 'repair' },
      { path: REPAIR_DROP_IN_PATH, mode: 0o644, content: renderRepairDropIn(host, playbook), role: 'repair' },
    );
  }
  if (playbook.fabricSysctl) files.push({ path: SYSCTL_PATH, mode: 0o644, content: renderSysctlConf(host, fleet, playbook, playbook.fabricSysctl, 'hook'), role: 'sysctl' });
  return [...files, ownedRecordFile(host, fleet, playbook)];
}

/** Whatever persists the routing, the host records what it is (render/owned-record.ts). */
function ownedRecordFile(host: Host, fleet: Fleet, playbook: Playbook): RenderedFile {
  return { path: OWNED_PATH, mode: 0o644, content: renderOwnedRecord(host, fleet, playbook), role: 'record' };
}

export function formatMode(mode: number): string {
  return mode.toString(8).padStart(4, '0');
}

/**
 * When `lab restart` and `lab flap` may report that the hooks have run: from the dispatchers' own
 * word, not from a pause with no hook process (a dispatcher still starting, or between two of the
 * manager's reports, passes that; it made the CI flake of boots, manager-boot.ts). What the lab
 * reads is only what the real programs do — it never runs a hook or tidies a host.
 * - NetworkManager logs each call of its dispatcher and the dispatcher's answer, which comes when
 *   the call's scripts have ended (the lab starts it with DISPATCH at debug). Done when every call
 *   since the event has its answer and the manager has done what the event asks: after a restart,
 *   its startup is complete; after a flap, the carrier is back on the NIC and, had the manager taken
 *   the NIC down meanwhile, it is active again.
 * - networkd-dispatcher, as the lab starts it, records each link report of networkd it handled
 *   (dispatch-recorder.ts). Done when, for each NIC, networkd shows the NIC's states
 *   from before the event again and the states the dispatcher handled last are networkd's now: it
 *   runs hooks only for a state that changed, so none is left to run. After a flap it must also
 *   have handled a report since (the carrier's loss always makes one). After a restart of networkd
 *   it may have heard none: it follows networkd's new bus name late and misses what came before
 *   (Debian 13 without systemd hears nothing, Debian 12 only `configured`, which networkd reaches
 *   when its IPv6 solicitations time out, ~12 s after routable: the restart waits for it).
 * - ifupdown: no daemon reacts to a carrier, and `ifup` returns when its hooks have: nothing to wait for.
 */
import { readFile, readdir } from 'node:fs/promises';
import { DISPATCHED_SUBDIR } from './dispatch-recorder.js';
import { labExec } from './exec.js';
import type { LabHost, LabPlan } from './plan.js';
import { hostPaths } from './names.js';
import { waitUntil } from './processes.js';

/** What the lab waits on after an event: a manager's restart, or a carrier flap of some NICs. */
export type LabEvent = { readonly kind: 'restart' } | { readonly kind: 'flap'; readonly iface: string };

/** The host before the event: where its NetworkManager log ends, or what networkd-dispatcher had handled. */
export type DispatchMark =
  | { readonly manager: 'networkmanager'; readonly logFrom: number }
  | {
      readonly manager: 'netplan';
      /** Per NIC: reports handled so far, and networkd's states. */
      readonly handled: ReadonlyMap<string, number>;
      readonly links: ReadonlyMap<string, NetworkdLink>;
      /** The links networkd managed (a fresh host's NICs it does not: nothing reports on them). */
      readonly managed: ReadonlySet<string>;
    }
  | { readonly manager: 'none' };

/** A link as `networkctl list` shows it. */
export interface NetworkdLink {
  readonly operational: string;
  readonly setup: string;
}

/** A link's record of the lab's networkd-dispatcher: `COUNT ADMINISTRATIVE OPERATIONAL`. */
export interface DispatchRecord {
  readonly handled: number;
  readonly administrative: string;
  readonly operational: string;
}

/** `networkctl list --no-legend`: `IDX LINK TYPE OPERATIONAL SETUP` a line. */
export function parseNetworkctlList(text: string): Map<string, NetworkdLink> {
  const links = new Map<string, NetworkdLink>();
  for (const line of text.split('\n')) {
    const [idx, name, , operational, setup] = line.trim().split(/\s+/);
    if (idx && /^\d+$/.test(idx) && name && operational && setup) links.set(name, { operational, setup });
  }
  return links;
}

export function parseDispatchRecord(text: string): DispatchRecord | undefined {
  const [handled, administrative, operational] = text.trim().split(' ');
  if (!handled || !/^\d+$/.test(handled) || !administrative || !operational) return undefined;
  return { handled: Number(handled), administrative, operational };
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Whether NetworkManager's log since the event (`log`) shows the event done and every dispatcher
 * call answered. After a restart only the new process's lines count: the old one's last calls
 * were never answered, it was ended.
 */
export function nmDispatchDone(log: string, event: LabEvent): boolean {
  let lines = log.split('\n');
  if (event.kind === 'restart') {
    const start = lines.findLastIndex((l) => /NetworkManager \(version [^)]*\) is starting/.test(l));
    if (start < 0) return false;
    lines = lines.slice(start);
    // Not `startup complete is waiting for device …`.
    if (!lines.some((l) => /manager: startup complete\s*$/.test(l))) return false;
  } else {
    const nic = escape(`(${event.iface}): `);
    const connected = lines.findLastIndex((l) => new RegExp(`${nic}carrier: link connected`).test(l));
    if (connected < 0) return false;
    const down = lines.findLastIndex((l) => new RegExp(`${nic}state change: activated -> `).test(l));
    // The carrier was away longer than the manager's grace: it took the NIC down, and brings it up again.
    if (down >= 0 && !lines.slice(down).some((l) => new RegExp(`${nic}Activation: successful`).test(l))) return false;
  }
  const calls = new Set<string>();
  const answered = new Set<string>();
  for (const line of lines) {
    const call = /dispatcher: \((\d+)\) .*dispatching action/.exec(line)?.[1];
    if (call !== undefined) calls.add(call);
    const answer = /dispatcher: \((\d+)\) (?:.* )?(?:succeeded|failed|cancelling)/.exec(line)?.[1];
    if (answer !== undefined) answered.add(answer);
  }
  return [...calls].every((c) => answered.has(c));
}

/** Whether networkd-dispatcher has run the hooks of networkd's latest report for each of `ifaces`. */
export function networkdDispatchDone(
  mark: Extract<DispatchMark, { manager: 'netplan' }>,
  event: LabEvent,
  ifaces: readonly string[],
  links: ReadonlyMap<string, NetworkdLink>,
  records: ReadonlyMap<string, DispatchRecord>,
): boolean {
  return ifaces.every((iface) => {
    const link = links.get(iface);
    const record = records.get(iface);
    if (!link || !record) return false;
    const before = mark.links.get(iface);
    return (
      (event.kind === 'restart' || record.handled > (mark.handled.get(iface) ?? 0)) &&
      (before === undefined || (link.operational === before.operational && link.setup === before.setup)) &&
      record.administrative === link.setup &&
      record.operational === link.operational
    );
  });
}

async function networkdLinks(plan: LabPlan, host: LabHost): Promise<Map<string, NetworkdLink>> {
  const listed = await labExec(plan.name, host.id, ['networkctl', 'list', '--no-legend', '--no-pager']);
  return listed.code === 0 ? parseNetworkctlList(listed.stdout) : new Map();
}

async function dispatchRecords(plan: LabPlan, host: LabHost): Promise<Map<string, DispatchRecord>> {
  const dir = `${hostPaths(plan.name, host.id).boot}/${DISPATCHED_SUBDIR}`;
  const records = new Map<string, DispatchRecord>();
  for (const name of await readdir(dir).catch(() => [])) {
    if (name.startsWith('.')) continue;
    const record = parseDispatchRecord(await readFile(`${dir}/${name}`, 'utf8').catch(() => ''));
    if (record) records.set(name, record);
  }
  return records;
}

const nmLog = (plan: LabPlan, host: LabHost) => `${hostPaths(plan.name, host.id).boot}/NetworkManager.log`;

/** The host before the event (for a restart: before its manager is stopped). */
export async function markDispatch(plan: LabPlan, host: LabHost): Promise<DispatchMark> {
  if (!plan.networkDaemons || host.manager === 'ifupdown') return { manager: 'none' };
  if (host.manager === 'networkmanager') {
    const log = await readFile(nmLog(plan, host)).catch(() => Buffer.alloc(0));
    return { manager: 'networkmanager', logFrom: log.length };
  }
  const [links, records] = await Promise.all([networkdLinks(plan, host), dispatchRecords(plan, host)]);
  return {
    manager: 'netplan',
    handled: new Map([...records].map(([name, r]) => [name, r.handled])),
    links,
    managed: new Set([...links].filter(([, l]) => l.setup !== 'unmanaged').map(([name]) => name)),
  };
}

/** Until the hooks of the event have run (see the module's header); false after `timeoutMs`. */
export async function awaitDispatched(
  plan: LabPlan,
  host: LabHost,
  mark: DispatchMark,
  event: LabEvent,
  timeoutMs = 20_000,
): Promise<boolean> {
  if (mark.manager === 'none') return true;
  if (mark.manager === 'networkmanager')
    return waitUntil(
      async () => {
        const log = await readFile(nmLog(plan, host)).catch(() => Buffer.alloc(0));
        return nmDispatchDone(log.subarray(Math.min(mark.logFrom, log.length)).toString('utf8'), event);
      },
      timeoutMs,
      100,
    );
  const ifaces = (event.kind === 'flap' ? [event.iface] : host.nics.map((n) => n.iface)).filter((i) =>
    mark.managed.has(i),
  );
  return waitUntil(
    async () => {
      const [links, records] = await Promise.all([networkdLinks(plan, host), dispatchRecords(plan, host)]);
      return networkdDispatchDone(mark, event, ifaces, links, records);
    },
    timeoutMs,
    100,
  );
}

/**
 * Taking persist back. Rollback: the repair timer stopped (its files go with all of ibfleet's),
 * systemd told, and native persistence's configuration taken off the manager — ibfleet's properties
 * off the NICs' profiles, networkd reloaded without ibfleet's netplan file — before the kernel
 * state goes (a manager would otherwise put the rules back). The restore after a failed
 * verification: the profiles the change set back as they were, networkd reloaded with the netplan
 * file as it was, the repair timer as the restored units say. Pure.
 */
import type { Finding, Restore, Undo, FactsContext } from '../step.js';
import { change } from '../step.js';
import { renderNativeSteps, type NativeSteps } from './native-apply.js';
import { activeProfile, ibfleetPropertiesOn, PERSIST_ASPECTS } from './native-assess.js';
import { formerRoutingOf } from '../policy-routing/former.js';
import { planNativeRestore, planNativeRollback } from './native-plan.js';
import { REMOVE_TEXTFILE } from './monitor.js';
import { RELOAD_UNITS, repairUnitsAsRestored, STOP_TIMER } from './systemd.js';
import { NM_REAPPLY_EVENT_SINCE, WATCH_PATH, WATCH_START, WATCH_STOP } from './watch.js';
import { versionAtLeast } from '../../facts/nm-facts.js';
import { nmReapplyCommand } from './native-nm.js';

function rollbackFindings({ host, facts }: FactsContext): Finding[] {
  return host.nics.flatMap((nic): Finding[] => {
    const profile = activeProfile(facts, nic.iface);
    const left = ibfleetPropertiesOn(profile, nic, formerRoutingOf(host, facts));
    if (!profile || left === '') return [];
    return [
      {
        id: `nm ${nic.iface}`,
        subject: { kind: 'nic', iface: nic.iface, aspect: PERSIST_ASPECTS.profile },
        ok: false,
        detail: `${nic.iface}: connection profile ${profile.name} still carries ${left}`,
        fix: change(
          'nm-profile',
          'reset',
          nic.iface,
          `${nic.iface}: nmcli: take ${left} off profile ${profile.name}; reapply`,
        ),
      },
    ];
  });
}

/**
 * NetworkManager before 1.42 (1.30 seen): after the rollback took ibfleet's routing away, the NICs
 * it manages are reapplied once more, last, so NetworkManager puts its own subnet route back in
 * main. Its first reapply (native persistence's, taking the route table away) re-adds none, and its
 * route sync then removes the kernel-style route the rollback appended as one it does not own; a
 * second reapply, with the profile as it was, adds NetworkManager's own (with its metric).
 */
function nmReapplyLast(host: FactsContext['host'], facts: FactsContext['facts']): string[] {
  const nm = facts.nm;
  if (!nm || versionAtLeast(nm.version, NM_REAPPLY_EVENT_SINCE)) return [];
  const managed = host.nics.filter((n) => nm.active.has(n.iface));
  return managed.length
    ? [
        "# NetworkManager before 1.42: its own subnet route back in main (its route sync removed the rollback's).",
        ...managed.map((n) => `${nmReapplyCommand(n.iface)} >/dev/null 2>&1 || true`),
      ]
    : [];
}

export const persistUndo: Undo = {
  findings: rollbackFindings,
  lines: ({ host, facts }) => {
    const native = planNativeRollback(host, facts);
    return {
      beforeFiles: [STOP_TIMER],
      // After the files: a dispatcher hook that runs meanwhile finds no watcher to start again.
      afterFiles: [RELOAD_UNITS, REMOVE_TEXTFILE, ...(facts.files.has(WATCH_PATH) ? [WATCH_STOP] : [])],
      manager: native
        ? [
            '# Native persistence taken away first: the manager would otherwise put the rules back.',
            ...renderNativeSteps(native),
          ]
        : [],
      last: nmReapplyLast(host, facts),
    };
  },
};

export const persistRestore: Restore = {
  snapshot: ({ host, facts }) =>
    host.nics.flatMap((nic): [string, string][] => {
      const profile = activeProfile(facts, nic.iface);
      return profile
        ? [
            [
              `${nic.iface} connection profile ${profile.name}`,
              `ipv4.route-table ${profile.routeTable}, ipv4.routing-rules ${profile.rules.join(', ') || '(none)'}`,
            ],
          ]
        : [];
    }),
  lines: ({ host, facts }, memo) => {
    const native = planNativeRestore(host, facts, memo as NativeSteps | undefined);
    return {
      // A watcher the change started stops (after the files: no hook starts it again), and one that
      // ran before runs again from its program as it was.
      manager: [
        WATCH_STOP,
        ...(native
          ? [
              '',
              "# The manager's configuration as it was: connection profiles, netplan reloaded into networkd.",
              ...renderNativeSteps(native),
            ]
          : []),
      ],
      last: [...repairUnitsAsRestored(), ...(facts.files.has(WATCH_PATH) ? [WATCH_START] : [])],
    };
  },
};

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

export const persistUndo: Undo = {
  findings: rollbackFindings,
  lines: ({ host, facts }) => {
    const native = planNativeRollback(host, facts);
    return {
      beforeFiles: [STOP_TIMER],
      afterFiles: [RELOAD_UNITS, REMOVE_TEXTFILE],
      manager: native
        ? [
            '# Native persistence taken away first: the manager would otherwise put the rules back.',
            ...renderNativeSteps(native),
          ]
        : [],
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
      manager: native
        ? [
            '',
            "# The manager's configuration as it was: connection profiles, netplan reloaded into networkd.",
            ...renderNativeSteps(native),
          ]
        : [],
      last: repairUnitsAsRestored(),
    };
  },
};

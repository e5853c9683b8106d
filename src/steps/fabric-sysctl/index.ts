/**
 * The `fabric-sysctl` step: per fabric interface, the kernel settings rdma-core's librdmacm
 * documentation, the libfabric verbs multi-NIC guide and Red Hat give for several NICs in one
 * subnet — `arp_ignore=2` (answer ARP only on the NIC that owns the address, else RDMA CM maps the
 * peer's address to the wrong port), `arp_announce=2`, `rp_filter=2` (loose), `accept_local=1`.
 * Per-interface keys exist only while the interface does, so the routing script sets them on every up (with native persistence, deploy sets them
 * and systemd's udev rule applies the persisted file as each interface appears). Pure.
 */
import * as z from 'zod';
import type { Nic } from '../../inventory/model.js';
import { factOf } from '../../facts/host-facts.js';
import { shellQuote } from '../../script/shell.js';
import { change, nicFinding, type ApplyPart, type Finding, type HostContext, type StepModule } from '../step.js';
import { SYSCTL_FACT, SYSCTL_KEYS, type SysctlKey } from './facts.js';
import { renderSysctlConf, SYSCTL_PATH, type SysctlParams } from './sysctl-file.js';
import { fabricSysctlRestore, fabricSysctlUndo } from './undo.js';

const sysctlValue = (max: number, what: string) =>
  z
    .int({ error: `${what} is a whole number 0..${max}` })
    .min(0, { error: `${what} is 0..${max}` })
    .max(max, { error: `${what} is 0..${max}` });

/** Defaults are the values librdmacm, the libfabric verbs guide and Red Hat give for several NICs in one subnet. */
const params = z.strictObject({
  arp_ignore: sysctlValue(8, 'arp_ignore').default(2),
  arp_announce: sysctlValue(2, 'arp_announce').default(2),
  rp_filter: sysctlValue(2, 'rp_filter').default(2),
  accept_local: sysctlValue(1, 'accept_local').default(1),
});

function nicFindings(ctx: HostContext, nic: Nic, values: SysctlParams): Finding[] {
  const found = factOf(ctx.facts, SYSCTL_FACT).get(nic.iface) ?? {};
  return SYSCTL_KEYS.map((key) => {
    const want = String(values[key]);
    const have = found[key] ?? '';
    return nicFinding(
      nic,
      `sysctl ${key}`,
      `sysctl ${nic.iface} ${key}`,
      have === want,
      have === want ? `${nic.iface}: ${key}=${want}` : `${nic.iface}: ${key} is ${have || 'unreadable'}, want ${want}`,
      change('sysctl', 'set', nic.iface, `${nic.iface}: ${key} ${have || '?'} → ${want}`),
    );
  });
}

/** Where no routing script runs (native persistence), deploy writes the failing settings itself. */
function directly(ctx: HostContext, failing: readonly Finding[], values: SysctlParams): ApplyPart {
  if (ctx.persistence.kind === 'script') return {};
  const kernel: string[] = [];
  for (const nic of ctx.host.nics) {
    for (const key of SYSCTL_KEYS.filter((k: SysctlKey) =>
      failing.some(
        (f) => f.subject.kind === 'nic' && f.subject.iface === nic.iface && f.subject.aspect === `sysctl ${k}`,
      ),
    )) {
      const file = shellQuote(`/proc/sys/net/ipv4/conf/${nic.iface}/${key}`);
      kernel.push(
        `if printf '%s\\n' ${values[key]} >${file}; then echo ${shellQuote(`ibfleet: ${nic.iface}: ${key} ${values[key]}`)}; else status=1; fi`,
      );
    }
  }
  return { kernel };
}

export const fabricSysctl: StepModule<SysctlParams> = {
  name: 'fabric-sysctl',
  summary: 'per fabric interface: arp_ignore, arp_announce, rp_filter, accept_local for several NICs in one subnet',
  params,
  kinds: [
    { kind: 'sysctl', noun: ['sysctl', 'sysctls'], shape: 'counted' },
    { kind: 'sysctl-file', noun: ['sysctl file', 'sysctl files'], shape: 'file' },
  ],
  paths: [{ path: SYSCTL_PATH, kind: 'sysctl-file' }],
  facts: [SYSCTL_FACT],
  undo: fabricSysctlUndo,
  restore: fabricSysctlRestore,
  use: (values) => ({
    name: 'fabric-sysctl',
    files: (ctx) => [
      {
        path: SYSCTL_PATH,
        mode: 0o644,
        content: renderSysctlConf(
          ctx.host,
          ctx.fleet,
          ctx.playbook,
          values,
          ctx.persistence.kind === 'script' ? 'hook' : 'native',
        ),
        role: 'sysctl',
        kind: 'sysctl-file',
      },
    ],
    // host/ibfleet-routes: set_sysctl per NIC before its routing (and snapshot_sysctls).
    routesData: () => SYSCTL_KEYS.map((key) => `sysctl ${key} ${values[key]}`),
    nicFindings: (ctx, nic) => nicFindings(ctx, nic, values),
    apply: (ctx, { failing }) => directly(ctx, failing, values),
  }),
};

export { SYSCTL_KEYS, SYSCTL_PATH };

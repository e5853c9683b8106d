/** Text for `ibfleet lab up | down | reboot`. Pure. */
import { foldHosts } from '../inventory/select.js';
import { emulationLabel } from './emulation.js';
import type { LabInfo } from './info.js';
import type { LabDownResult } from './down.js';
import { labNameOption } from './names.js';
import type { HostReboot } from './reboot.js';
import type { LabSummary } from './state.js';
import { SUITE_RELEASE, type Suite } from './suites.js';

const SHOWN_HOSTS = 12;

/**
 * `ibfleet` is how the next commands are printed; the caller passes the full `node …/cli.js` instead
 * when no `ibfleet` on PATH is this one, so every printed line runs as printed.
 */
export function formatLabUpText(info: LabInfo, elapsedMs: number, ibfleet = 'ibfleet'): string {
  const ids = foldHosts(info.hosts.map((h) => h.id));
  const shown = info.hosts.slice(0, SHOWN_HOSTS);
  const width = (texts: string[]) => Math.max(...texts.map((t) => t.length));
  const [names, addresses, labels] = [
    width(shown.map((h) => h.name)),
    width(shown.map((h) => h.address)),
    width(shown.map((h) => emulationLabel(h.manager, h.systemd, h.fresh, h.suite))),
  ];
  const rows = shown.map((h) => {
    const nics = h.fresh
      ? `${h.nics.map((n) => n.iface).join(', ')} (no address yet)`
      : h.nics.map((n) => `${n.iface} ${n.address}/${n.prefixLength}`).join(', ');
    return `  ${String(h.id).padStart(3)}  ${h.name.padEnd(names)}  ${h.address.padEnd(addresses)}  ${emulationLabel(h.manager, h.systemd, h.fresh, h.suite).padEnd(labels)}  ${nics}`;
  });
  if (info.hosts.length > SHOWN_HOSTS) rows.push(`  … and ${info.hosts.length - SHOWN_HOSTS} more (see the inventory)`);
  // Each suite once: what its root runs.
  const suites = new Map(
    info.hosts.flatMap((h) => (h.suite !== undefined ? [[h.suite, h.versions ?? ''] as const] : [])),
  );
  for (const [suite, versions] of suites) rows.push(`  ${suite} (${SUITE_RELEASE[suite]}): ${versions}`);
  const [a, b] = [info.hosts[0]!, info.hosts[1] ?? info.hosts[0]!];
  const nic2 = a.nics[1];
  const mostNics = Math.max(...info.hosts.map((h) => h.nics.length));
  const peer = b.nics[1] ?? b.nics[0]!;
  const lines = [
    `lab ${info.name} is up: ${info.hosts.length} host(s) ${ids} in ${(elapsedMs / 1000).toFixed(1)} s`,
    ...rows,
    '',
    `inventory    ${info.inventoryPath}`,
    `known_hosts  ${info.knownHostsPath}`,
    `ssh key      ${info.identityPath}`,
    `management   ${info.mgmtSubnet} via ${info.rootLink} (this machine: ${info.controllerAddress})`,
    '',
    `The seeds' failure is live: NIC 1 reaches NIC 1, anything through ${mostNics > 2 ? `NICs 2–${mostNics}` : 'NIC 2'} fails (strict rp_filter):`,
    `  ip netns exec ${a.namespace} ping -c1 -W1 -I ${a.nics[0]!.iface} ${b.nics[0]!.address}    # works`,
    ...(nic2
      ? [`  ip netns exec ${a.namespace} ping -c1 -W1 -I ${nic2.iface} ${peer.address}    # fails until deploy`]
      : []),
    '',
    'Next:',
    `  ${ibfleet} deploy -i ${info.inventoryPath} --hosts ${ids}`,
    `  ${ibfleet} status -i ${info.inventoryPath}`,
    `  ssh -i ${info.identityPath} -o UserKnownHostsFile=${info.knownHostsPath} root@${a.address}`,
    ...insideHints(info, a, ibfleet),
    `  ${ibfleet} lab down${labNameOption(info.name)}`,
    '',
  ];
  return lines.join('\n');
}

/** A look inside the first host, and its reboot: with its manager where the lab runs them. */
function insideHints(info: LabInfo, a: LabInfo['hosts'][number], ibfleet: string): string[] {
  const exec = `  ${ibfleet} lab exec ${a.id}${labNameOption(info.name)} --`;
  if (!info.managers)
    return [`${exec} ip -4 addr    # inside the host (no network manager runs in this lab: lab up --no-managers)`];
  return [
    `${exec} ${a.manager === 'networkmanager' ? 'nmcli device' : a.manager === 'netplan' ? 'networkctl' : 'ip -4 addr'}    # inside the host, with its real ${a.manager === 'ifupdown' ? 'ifupdown' : a.manager === 'netplan' ? 'systemd-networkd' : 'NetworkManager'}`,
    `  ${ibfleet} lab reboot ${a.id}${labNameOption(info.name)}    # a real boot of its networking: the manager brings the NICs up, its dispatcher runs the hooks`,
  ];
}

export function labUpJson(info: LabInfo, elapsedMs: number) {
  return {
    command: 'lab up',
    ok: true,
    lab: info,
    elapsedMs: Math.round(elapsedMs),
    hosts: info.hosts.map((h) => ({
      id: h.id,
      name: h.name,
      status: 'ok',
      error: null,
      address: h.address,
      manager: h.manager,
      systemd: h.systemd,
      namespace: h.namespace,
      suite: h.suite ?? null,
      versions: h.versions ?? null,
    })),
  };
}

export function formatLabDownText(results: readonly LabDownResult[], name: string | undefined): string {
  if (results.length === 0 || results.every((r) => !r.found))
    return `${name === undefined ? 'no lab is up' : `lab ${name} is not up`}; nothing to remove\n`;
  return results
    .filter((r) => r.found)
    .map(
      (r) =>
        `lab ${r.name} removed: ${r.namespaces} namespace(s), ${r.processes} process(es), ${r.mounts} mount(s)${r.rootLink ? ', its link' : ''}${r.dir ? ' and its state directory' : ''}\n`,
    )
    .join('');
}

const DAEMONS: Readonly<Record<HostReboot['manager'], string>> = {
  networkmanager: 'NetworkManager (D-Bus-activated dispatcher)',
  netplan: 'netplan generate, systemd-networkd, networkd-dispatcher',
  ifupdown: 'ifup -a',
};

/** `lab list`: one row per lab, with what a user needs to reach it. */
export function formatLabListText(labs: readonly LabSummary[]): string {
  if (labs.length === 0) return 'no lab is up on this machine (start one with: ibfleet lab up)\n';
  const rows = labs.map((l) => [
    l.name,
    l.status === 'up' && l.hostsWithoutSshd.length === l.hosts.length ? 'stopped' : l.status,
    foldHosts(l.hosts),
    l.mgmtSubnet,
    l.inventory,
  ]);
  const header = ['NAME', 'STATUS', 'HOSTS', 'SUBNET', 'INVENTORY'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: readonly string[]) =>
    cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join('  ');
  const crashed = labs
    .filter((l) => l.status !== 'up')
    .map((l) => `lab ${l.name} did not finish starting; remove it with: ibfleet lab down${labNameOption(l.name)}\n`);
  const stopped = labs
    .filter((l) => l.hostsWithoutSshd.length > 0)
    .map((l) => {
      const which =
        l.hostsWithoutSshd.length === 1
          ? `host ${l.hostsWithoutSshd[0]} has`
          : `hosts ${foldHosts(l.hostsWithoutSshd)} have`;
      return `lab ${l.name}: ${which} no sshd running (the machine restarted, or it was stopped); start the lab again with: ibfleet lab down${labNameOption(l.name)}, then lab up\n`;
    });
  const systems = labs.filter((l) => l.hostSystems.some((h) => h.suite !== undefined)).map(formatHostSystems);
  return `${[header, ...rows].map(line).join('\n')}\n${systems.join('')}${crashed.join('')}${stopped.join('')}`;
}

/**
 * A lab whose hosts run on suites: which hosts run which manager on which root, hosts alike folded
 * into one line (`hosts 1-20: netplan on trixie (Debian 13): NM 1.52.1, systemd 257.13, …`).
 */
function formatHostSystems(lab: LabSummary): string {
  const groups = new Map<string, { ids: number[]; text: string }>();
  for (const h of lab.hostSystems) {
    const key = `${h.manager}/${h.suite ?? ''}`;
    const where =
      h.suite !== undefined
        ? `${h.suite} (${SUITE_RELEASE[h.suite as Suite] ?? h.suite}): ${h.versions || 'versions unknown'}`
        : "this machine's own /usr";
    const group = groups.get(key) ?? { ids: [], text: `${h.manager} on ${where}` };
    group.ids.push(h.id);
    groups.set(key, group);
  }
  const lines = [...groups.values()].map(
    (g) => `  ${g.ids.length > 1 ? 'hosts' : 'host'} ${foldHosts(g.ids)}: ${g.text}`,
  );
  return `lab ${lab.name}:\n${lines.join('\n')}\n`;
}

export function labListJson(labs: readonly LabSummary[]) {
  return {
    command: 'lab list',
    ok: true,
    labs: labs.map(({ rootLink: _link, ...l }) => ({ ...l, hostSet: foldHosts(l.hosts) })),
  };
}

export function formatRebootText(results: readonly HostReboot[]): string {
  const out: string[] = [];
  for (const r of results) {
    const what =
      r.reset.code !== 0
        ? `reset FAILED (exit ${r.reset.code})`
        : r.boot.code !== 0
          ? `boot FAILED (exit ${r.boot.code})`
          : `booted with ${DAEMONS[r.manager]} in ${(r.ms / 1000).toFixed(1)} s`;
    out.push(
      `host ${r.id} (${r.name}, ${r.manager}): ${r.stopped} process(es) of the last boot ended; ${what}${r.boot.code === 0 && !r.settled ? '; hooks still running after 20 s' : ''}`,
    );
    if (r.reset.code !== 0) out.push(indent(r.reset.stderr || r.reset.stdout));
    else if (r.boot.code !== 0) out.push(indent(r.boot.stderr || r.boot.stdout));
    if (r.manager !== 'ifupdown')
      out.push(`  hooks its dispatcher runs: ${r.hooks.length ? r.hooks.join(', ') : 'none installed'}`);
    for (const s of r.ifupRuns) out.push(`  ifup ran ${s.script} (IFACE=${s.iface})`);
    for (const s of r.skipped) out.push(`  skipped ${s.name}: ${s.reason}`);
  }
  return `${out.join('\n')}\n`;
}

export function rebootJson(results: readonly HostReboot[]) {
  return {
    command: 'lab reboot',
    ok: results.every((r) => r.ok),
    hosts: results.map((r) => ({
      id: r.id,
      name: r.name,
      status: r.ok ? 'ok' : 'failed',
      error: r.ok
        ? null
        : r.reset.code !== 0
          ? `reset exited ${r.reset.code}`
          : r.boot.code !== 0
            ? `boot exited ${r.boot.code}`
            : 'hooks still running after 20 s',
      manager: r.manager,
      stopped: r.stopped,
      ms: Math.round(r.ms),
      boot: { exitCode: r.boot.code, stdout: r.boot.stdout, stderr: r.boot.stderr },
      hooks: r.hooks,
      ifupRuns: r.ifupRuns,
      skipped: r.skipped,
    })),
  };
}

function indent(text: string): string {
  return text
    .trimEnd()
    .split('\n')
    .slice(-8)
    .map((l) => `          ${l}`)
    .join('\n');
}

/**
 * `ibfleet env`: the settings each host's RDMA jobs need, from what its probe proved of its ports,
 * and the text a job script sources. Pure.
 *
 * Per host, NIC by NIC in the inventory's order: the RDMA device and port behind each fabric NIC
 * (as ibdev2netdev maps it, never assumed to be mlx5_N:1), the interface of NIC 1 for the libraries'
 * TCP bootstrap, and on RoCE the index of the RoCE v2 GID carrying the NIC's convention address —
 * what NCCL and UCX otherwise pick by themselves, and pick wrong (fe80::, or the index another host
 * has). A host's settings are refused, naming the cause, where its fabric is not ready (a port not
 * ACTIVE, a NIC without its address, no GID for it, another subnet manager): a job started there would hang in
 * connection setup, which is worse than not starting.
 *
 * One block serves the fleet when every host's settings agree; otherwise one block per group of
 * hosts alike, with the reason they differ. Values come from hosts and are hostile: device and
 * interface names that are not plain names refuse the host, and every value is single-quoted.
 */
import type { HostFacts } from '../facts/host-facts.js';
import { nicFabric } from '../facts/nic-fabric.js';
import type { Fleet, Host } from '../inventory/model.js';
import { fabricConsistency } from '../steps/fabric-health/consistency.js';
import { fabricProblems } from '../steps/fabric-health/problems.js';
import { foldHosts } from '../inventory/select.js';
import { nicBlockers } from './assess.js';
import { shellQuote } from '../script/shell.js';
import type { NicFabric } from '../vocabulary.js';

export const ENV_LIBRARIES = ['nccl', 'ucx', 'mpi'] as const;
export type EnvLibrary = (typeof ENV_LIBRARIES)[number];

export interface EnvSetting {
  readonly name: string;
  readonly value: string;
  /** Which library reads it. */
  readonly library: EnvLibrary;
}

/** A comment the block carries: why a setting is left to the library here. */
export interface HostEnv {
  readonly host: number;
  readonly name: string;
  readonly settings: readonly EnvSetting[];
  readonly notes: readonly string[];
}

export interface EnvRefusal {
  readonly host: number;
  readonly cause: string;
}

/** What a host's probe proved, as env reads it: its NICs' fabric facts and what keeps them from working. */
export interface HostFabricState {
  readonly host: Host;
  readonly fabric: readonly NicFabric[];
  readonly problems: readonly string[];
}

/**
 * Each host's fabric as status reads it, with what keeps it from carrying a job: a fabric NIC
 * missing, down or without its convention address (the bootstrap interface and RDMA CM need it, on
 * InfiniBand as on RoCE), its own ports' problems, and a port that sees another subnet manager or
 * subnet prefix than the rest.
 */
export function fabricStates(
  read: readonly { readonly host: Host; readonly facts: HostFacts }[],
  fleet: Fleet,
): HostFabricState[] {
  const states = read.map(({ host, facts }) => {
    const fabric = host.nics.map((nic) => nicFabric(nic, facts));
    const nics = nicBlockers(host, fleet, facts).map((b) => b.message);
    const own = facts.rdma ? fabricProblems(host, fabric, facts) : ['no RDMA device was read (/sys/class/infiniband)'];
    return { host, fabric, problems: [...nics, ...own] };
  });
  const { outliers } = fabricConsistency(states.map((s) => ({ host: s.host.id, fabric: s.fabric })));
  return states.map((s) => ({
    ...s,
    problems: [...s.problems, ...outliers.filter((o) => o.host === s.host.id).map((o) => o.text)],
  }));
}

/** A device or interface name as the kernel makes them: anything else is refused, not quoted into a job's environment. */
const PLAIN_NAME = /^[A-Za-z0-9_.:-]{1,64}$/;

/** The settings of one host, or why it gets none. */
export function hostEnv(state: HostFabricState, fleet: Fleet, libraries: readonly EnvLibrary[]): HostEnv | EnvRefusal {
  const { host } = state;
  if (state.problems.length > 0) return { host: host.id, cause: state.problems.join('; ') };
  const nics = [...state.fabric].sort((a, b) => a.nic - b.nic);
  const missing = nics.find((n) => n.device === null || n.port === null);
  if (nics.length === 0 || missing)
    return { host: host.id, cause: `${missing?.iface ?? 'its fabric NICs'}: no RDMA device and port was read` };
  const odd = nics.find((n) => !PLAIN_NAME.test(n.device!) || !PLAIN_NAME.test(n.iface));
  if (odd)
    return {
      host: host.id,
      cause: `NIC ${odd.nic}: the host names its device or interface in characters no job setting takes`,
    };
  const roce = nics.filter((n) => n.linkLayer === 'Ethernet');
  const noGid = roce.find((n) => n.roceV2Gid === null);
  if (noGid) return { host: host.id, cause: `${noGid.iface} is RoCE but no RoCE v2 GID carries its address` };
  const indexes = [...new Set(roce.map((n) => n.roceV2Gid!))];
  const ports = nics.map((n) => `${n.device}:${n.port}`).join(',');
  const bootstrap = nics[0]!.iface;
  const settings: EnvSetting[] = [];
  const notes: string[] = [];
  const gidSplit =
    indexes.length > 1
      ? `the RoCE v2 GIDs of ${host.name}'s NICs sit at different indexes (${roce.map((n) => `NIC ${n.nic} ${n.iface}: ${n.roceV2Gid}`).join(', ')})`
      : undefined;
  for (const library of libraries) {
    const add = (name: string, value: string) => settings.push({ name, value, library });
    if (library === 'nccl') {
      // `=`: exact names. Without it NCCL matches prefixes (mlx5_1 also takes mlx5_10; ib takes ib1).
      add('NCCL_IB_HCA', `=${ports}`);
      add('NCCL_SOCKET_IFNAME', `=${bootstrap}`);
      if (indexes.length === 1) add('NCCL_IB_GID_INDEX', String(indexes[0]));
      else if (gidSplit) {
        // One index cannot serve both: NCCL (2.21+) then picks each port's GID by address and RoCE version.
        add('NCCL_IB_ADDR_FAMILY', 'AF_INET');
        add('NCCL_IB_ADDR_RANGE', fleet.fabric.subnetText);
        add('NCCL_IB_ROCE_VERSION_NUM', '2');
        notes.push(
          `${gidSplit}: one NCCL_IB_GID_INDEX cannot serve them; NCCL picks each port's GID in ${fleet.fabric.subnetText} instead`,
        );
      }
    } else if (library === 'ucx') {
      add('UCX_NET_DEVICES', ports);
      if (indexes.length === 1) add('UCX_IB_GID_INDEX', String(indexes[0]));
      else if (gidSplit) notes.push(`${gidSplit}: UCX_IB_GID_INDEX left to UCX's own choice`);
    } else {
      add('OMPI_MCA_btl_tcp_if_include', nics.map((n) => n.iface).join(','));
      add('OMPI_MCA_oob_tcp_if_include', bootstrap);
    }
  }
  return { host: host.id, name: host.name, settings, notes };
}

export function isRefusal(x: HostEnv | EnvRefusal): x is EnvRefusal {
  return 'cause' in x;
}

export interface EnvBlock {
  readonly hosts: readonly number[];
  readonly names: readonly string[];
  readonly settings: readonly EnvSetting[];
  readonly notes: readonly string[];
}

export interface FleetEnv {
  /** One block for the whole fleet, or one per group of hosts whose settings are alike. */
  readonly blocks: readonly EnvBlock[];
  /** Why there is more than one block: each setting that differs, and what each group has. */
  readonly reasons: readonly string[];
}

const blockKey = (e: Pick<HostEnv, 'settings' | 'notes'>) =>
  JSON.stringify([e.settings.map((s) => [s.name, s.value]), e.notes]);

/** Hosts alike folded into one block each, in host order; the settings that differ named. */
export function foldEnv(hosts: readonly HostEnv[]): FleetEnv {
  const groups = new Map<string, HostEnv[]>();
  for (const h of [...hosts].sort((a, b) => a.host - b.host))
    groups.set(blockKey(h), [...(groups.get(blockKey(h)) ?? []), h]);
  const blocks = [...groups.values()].map((g) => ({
    hosts: g.map((h) => h.host),
    names: g.map((h) => h.name),
    settings: g[0]!.settings,
    notes: g[0]!.notes,
  }));
  return { blocks, reasons: blocks.length > 1 ? differences(blocks) : [] };
}

/** `NCCL_IB_GID_INDEX differs: 34 has 5, 40,41 have 3`. */
function differences(blocks: readonly EnvBlock[]): string[] {
  const names = [...new Set(blocks.flatMap((b) => b.settings.map((s) => s.name)))];
  const reasons: string[] = [];
  for (const name of names) {
    const values = blocks.map((b) => b.settings.find((s) => s.name === name)?.value);
    if (new Set(values).size < 2) continue;
    const shown = blocks
      .map((b, i) => `${foldHosts(b.hosts)} ${b.hosts.length > 1 ? 'have' : 'has'} ${values[i] ?? 'none'}`)
      .join(', ');
    reasons.push(`${name} differs: ${shown}`);
  }
  // Why first (a host's GIDs at another index), then what differs because of it.
  return [...blocks.flatMap((b) => b.notes.map((note) => `${foldHosts(b.hosts)}: ${note}`)), ...reasons];
}

/**
 * The text to source: `export NAME='value'` lines. One block: for every host alike. Several: each
 * under a `case` on the host's name (IBFLEET_HOST, else `hostname -s`), so one file serves every
 * node of a job; a host of none of the blocks gets nothing and says so on stderr.
 */
export function renderEnvShell(fleet: FleetEnv, command: string): string {
  const exports = (b: EnvBlock, indent: string) => [
    ...b.notes.map((n) => `${indent}# ${oneLine(n)}`),
    ...b.settings.map((s) => `${indent}${exportLine(s)}`),
  ];
  const head = [`# ${oneLine(command)}`, '# generated by ibfleet from what each host proved of its RDMA ports'];
  if (fleet.blocks.length === 1) {
    const b = fleet.blocks[0]!;
    return [...head, `# hosts ${foldHosts(b.hosts)}: one block, every host alike`, ...exports(b, '')].join('\n') + '\n';
  }
  return (
    [
      ...head,
      '# the hosts differ, so each gets its own block:',
      ...fleet.reasons.map((r) => `#   ${oneLine(r)}`),
      'case ${IBFLEET_HOST:-$(hostname -s)} in',
      ...fleet.blocks.flatMap((b) => [
        `${b.names.map(quoteAlways).join(' | ')})`,
        `\t# hosts ${foldHosts(b.hosts)}`,
        ...exports(b, '\t'),
        '\t;;',
      ]),
      `*) echo ${quoteAlways(`ibfleet env: this host is none of ${fleet.blocks.flatMap((b) => b.names).join(', ')}; set IBFLEET_HOST to its inventory name`)} >&2 ;;`,
      'esac',
    ].join('\n') + '\n'
  );
}

/** `export NAME='value'`: the line a job sources (the cheat sheet prints the same). */
export function exportLine(s: Pick<EnvSetting, 'name' | 'value'>): string {
  return `export ${s.name}=${quoteAlways(s.value)}`;
}

/** Always in single quotes (a value like `=ib0` needs none, but a reader sees at once what is literal). */
function quoteAlways(value: string): string {
  const quoted = shellQuote(value);
  return quoted.startsWith("'") ? quoted : `'${value}'`;
}

/** A comment stays one line whatever a text holds. */
function oneLine(text: string): string {
  return text.replace(/[\r\n]+/g, ' ');
}

/** The `--format json` document's body (the command adds `command` and `ok`). */
export function envJson(fleet: FleetEnv, refused: readonly EnvRefusal[]) {
  const settings = (b: EnvBlock) => Object.fromEntries(b.settings.map((s) => [s.name, s.value]));
  return {
    fleetWide: fleet.blocks.length === 1 && refused.length === 0 ? settings(fleet.blocks[0]!) : null,
    blocks: fleet.blocks.map((b) => ({ hosts: b.hosts, names: b.names, settings: settings(b), notes: b.notes })),
    reasons: fleet.reasons,
    refused,
  };
}

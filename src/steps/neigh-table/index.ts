/**
 * The `neigh-table` step: the kernel's neighbour (ARP) table sized for the fleet. Every fabric NIC
 * keeps an entry for each peer NIC it talks to; past gc_thresh3 every send fails with "No buffer
 * space available" and the kernel logs "neighbor table overflow" — at 254 dual-NIC hosts a fabric
 * is right at the default limit (1024), and an 8-NIC GPU node among 254 needs 16 times that. Sized per host
 * (its own NIC count × every NIC of the fabric). Where the fleet needs more than the kernel's defaults, the
 * limits are raised (never lowered: an admin's higher ones stay) at once — by the routing script,
 * or by deploy where a manager's configuration holds the routing — and persisted in a sysctl.d
 * file for the next boot; status warns about a host below them. A fleet the defaults fit gets
 * nothing. Pure.
 */
import * as z from 'zod';
import { factOf } from '../../facts/host-facts.js';
import { renderHeader } from '../../script/header.js';
import type { RenderedFile } from '../../script/rendered-file.js';
import { shellQuote } from '../../script/shell.js';
import {
  change,
  type ApplyPart,
  type Finding,
  type HostContext,
  type RenderContext,
  type StepModule,
} from '../step.js';
import { NEIGH_FACT } from './facts.js';
import { neighbourWarning, raisedNeighThresholds, sizingText } from './thresholds.js';

/** Persisted for every boot; sysctl.d reads it with the other fabric settings. */
export const NEIGH_PATH = '/etc/sysctl.d/60-ibfleet-neigh.conf';

/** Largest first: gc_thresh3 is the hard limit, and the others must stay below it. */
const ORDER = ['gc_thresh3', 'gc_thresh2', 'gc_thresh1'] as const;

/**
 * /proc/sys answers a byte-at-a-time read with its first byte only, hence cat. A limit already
 * higher (an admin's, the lab's) stays; a host whose network namespace has no such file (a
 * container) is left alone.
 */
function file(ctx: RenderContext): RenderedFile[] {
  const want = raisedNeighThresholds(ctx.fleet, ctx.host);
  if (!want) return [];
  const content = [
    renderHeader(ctx.host, ctx.playbook, NEIGH_PATH),
    '#',
    `# Neighbour table for ${sizingText(ctx.fleet, ctx.host)}: every NIC keeps an ARP entry per peer NIC; past`,
    `# gc_thresh3 every send fails with "No buffer space available". Raised, never lowered, by ${ctx.persistence.kind === 'script' ? 'the hook' : 'deploy'} too.`,
    ...(['gc_thresh1', 'gc_thresh2', 'gc_thresh3'] as const).map((k) => `net.ipv4.neigh.default.${k} = ${want[k]}`),
    '',
  ].join('\n');
  return [{ path: NEIGH_PATH, mode: 0o644, content, role: 'sysctl', kind: 'sysctl-file' }];
}

/** host/ibfleet-routes: raise_neigh, once per run before the NICs, for a host the kernel's defaults do not fit. */
function routesData(ctx: RenderContext): string[] {
  const want = raisedNeighThresholds(ctx.fleet, ctx.host);
  return want ? ORDER.map((k) => `neigh ${k} ${want[k]}`) : [];
}

/** Where no routing script runs (native persistence), deploy raises the limits the host has below what the fleet needs. */
function directly(ctx: HostContext): ApplyPart {
  const want = raisedNeighThresholds(ctx.fleet, ctx.host);
  if (ctx.persistence.kind === 'script' || !want) return {};
  const have = factOf(ctx.facts, NEIGH_FACT);
  const raise = ORDER.filter((k) => have[k] !== undefined && have[k] !== '' && Number(have[k]) < want[k]);
  return {
    kernel: raise.map((key) => {
      const path = shellQuote(`/proc/sys/net/ipv4/neigh/default/${key}`);
      return `cur=$(cat ${path} 2>/dev/null) && { [ "$cur" -ge ${want[key]} ] 2>/dev/null || { printf '%s\\n' ${want[key]} >${path} && echo "ibfleet: neighbour table: ${key} $cur -> ${want[key]}"; } || status=1; }`;
    }),
  };
}

/** A file an earlier deploy left for a larger fleet: the kernel's defaults fit now. */
function stale(ctx: HostContext, rendered: readonly RenderedFile[]): Finding[] {
  if (rendered.some((f) => f.path === NEIGH_PATH) || !ctx.facts.files.has(NEIGH_PATH)) return [];
  return [
    {
      id: `stale ${NEIGH_PATH}`,
      subject: { kind: 'stale', path: NEIGH_PATH },
      ok: false,
      detail: `stale ${NEIGH_PATH} (the fleet fits the kernel's neighbour table now)`,
      fix: change('sysctl-file', 'remove', NEIGH_PATH, `remove ${NEIGH_PATH} (the kernel's defaults fit the fleet)`),
    },
  ];
}

export const neighTable: StepModule<Record<string, never>> = {
  name: 'neigh-table',
  summary: "the neighbour (ARP) table's limits raised to what the fleet needs, never lowered",
  params: z.strictObject({}),
  kinds: [{ kind: 'sysctl-file', noun: ['sysctl file', 'sysctl files'], shape: 'file' }],
  paths: [{ path: NEIGH_PATH, kind: 'sysctl-file' }],
  facts: [NEIGH_FACT],
  use: () => ({
    name: 'neigh-table',
    files: file,
    routesData,
    hostFindings: (ctx, rendered) => ({ after: stale(ctx, rendered) }),
    apply: directly,
    status: (ctx) => {
      const warning = neighbourWarning(ctx.fleet, ctx.host, factOf(ctx.facts, NEIGH_FACT));
      return warning ? { warnings: [warning] } : {};
    },
  }),
};

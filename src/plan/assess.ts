/**
 * Desired state vs probed facts, as one list of findings. The same assessment is the deploy plan
 * (failing findings → changes), the verification after apply (everything must hold) and the
 * status report (failing findings → drift reasons). The engine checks what is its own — that the
 * host can be changed at all, that each fabric NIC is there with its address, that ibfleet's files
 * are intact — and asks each of the playbook's steps for the rest. Pure.
 */
import type { Fleet, Host } from '../inventory/model.js';
import type { HostFacts } from '../facts/host-facts.js';
import type { Playbook } from '../playbook/playbook.js';
import { sha256 } from '../script/digest.js';
import { generatedFor } from '../script/header.js';
import type { RenderedFile } from '../script/rendered-file.js';
import { change, providedFor, type Blocker, type Finding, type HostContext } from '../steps/step.js';
import type { Change } from '../vocabulary.js';

export interface Assessment {
  /** Problems deploy cannot fix (missing interface, wrong address, not root); the host fails. */
  readonly blockers: readonly Blocker[];
  readonly findings: readonly Finding[];
}

/** The probe, the user and the tools every change needs. */
export function hostBlockers(facts: HostFacts): Blocker[] {
  const blockers: Blocker[] = [];
  if (!facts.complete)
    blockers.push({
      kind: 'probe',
      message: 'the probe stopped early (connection dropped or the host is missing basic tools)',
    });
  if (facts.uid !== undefined && facts.uid !== 0)
    blockers.push({
      kind: 'not-root',
      message: `commands run as uid ${facts.uid}, not root; set sudo: true for this host`,
    });
  for (const tool of ['flock', 'sha256sum', 'stat'])
    if (!facts.tools.has(tool) && facts.complete)
      blockers.push({ kind: 'tool', message: `${tool} is missing on the host (coreutils / util-linux)` });
  return blockers;
}

/** Interface problems that make a NIC unusable: deploy refuses, status reports them as drift. */
export function nicBlockers(host: Host, fleet: Fleet, facts: HostFacts): Blocker[] {
  const problems: Blocker[] = [];
  const known = [...facts.links.keys()].filter((l) => l !== 'lo');
  for (const nic of host.nics) {
    const link = facts.links.get(nic.iface);
    const iface = nic.iface;
    if (!link) {
      problems.push({
        kind: 'nic-missing',
        iface,
        message: `interface ${iface} (NIC ${nic.index}) not found; the host has ${known.join(', ') || 'no interfaces'}`,
      });
      continue;
    }
    const here = facts.addresses.filter((a) => a.iface === iface);
    const exact = here.find((a) => a.address === nic.address);
    if (exact && exact.prefixLength !== fleet.fabric.subnet.prefixLength) {
      problems.push({
        kind: 'nic-address',
        iface,
        message: `${iface} carries ${nic.address}/${exact.prefixLength}, but the fabric is ${fleet.fabric.subnetText}`,
      });
    } else if (exact && !link.up) {
      problems.push({
        kind: 'nic-down',
        iface,
        message: `${iface} is down (it carries ${nic.address}, but the link is not up)`,
      });
    } else if (!exact) {
      const elsewhere = facts.addresses.find((a) => a.address === nic.address);
      if (elsewhere) {
        problems.push({
          kind: 'nic-address',
          iface,
          message: `${nic.address} (NIC ${nic.index}) is on ${elsewhere.iface}, not ${iface}: are the interfaces swapped in the inventory?`,
        });
      } else if (!link.up) {
        problems.push({ kind: 'nic-unaddressed', iface, message: `${iface} is down (no ${nic.address})` });
      } else {
        const has = here.map((a) => `${a.address}/${a.prefixLength}`).join(', ') || 'no IPv4 address';
        problems.push({
          kind: here.length ? 'nic-address' : 'nic-unaddressed',
          iface,
          message: `${iface} carries ${has}, but the convention gives NIC ${nic.index} of host ${host.id} ${nic.address}/${fleet.fabric.subnet.prefixLength}`,
        });
      }
    }
  }
  return problems;
}

export { generatedFor } from '../script/header.js';

/**
 * Why a file's content differs, as far as its header tells — generated for another host name or
 * number (the inventory renamed the host since the last deploy) — or a step (`stepWhy`: another
 * tableBase, as the ownership record says); else it was edited on the host.
 */
function modifiedWhy(text: string | undefined, file: RenderedFile, host: Host, stepWhy: string | undefined): string {
  const made = generatedFor(text);
  // The routing program was rendered per host before it became one file for every host.
  if (made && !generatedFor(file.content)) {
    return `is the per-host version ibfleet ${made.version} generated for host ${made.id} (${made.name}); this ibfleet's is the same on every host, with the host's part in its data: deploy replaces it (not a hand edit)`;
  }
  if (made && (made.id !== host.id || made.name !== host.name)) {
    return `was generated for host ${made.id} (${made.name}), not ${host.id} (${host.name}): the inventory renamed the host since the last deploy; deploy regenerates it (not a hand edit)`;
  }
  return stepWhy ?? 'was modified (content differs from the rendered file)';
}

/** One of ibfleet's files: there, with this content, mode and owner. `why`: what the steps tell of a differing file. */
export function fileFinding(
  file: RenderedFile,
  host: Host,
  facts: HostFacts,
  why?: (file: RenderedFile) => string | undefined,
): Finding {
  const found = facts.files.get(file.path);
  const base = { id: `file ${file.path}`, subject: { kind: 'file', path: file.path } } as const;
  const label = file.label ?? file.path;
  const mode = file.mode.toString(8);
  if (!found)
    return {
      ...base,
      ok: false,
      detail: `${label} is missing`,
      fix: change(file.kind, 'install', file.path, `install ${file.path} (${mode})`),
    };
  if (found.sha256 !== sha256(file.content))
    return {
      ...base,
      ok: false,
      detail: `${label} ${modifiedWhy(facts.contents.get(file.path)?.text, file, host, why?.(file))}`,
      fix: change(file.kind, 'replace', file.path, `replace ${file.path} (content differs)`),
    };
  if (found.mode !== file.mode || found.uid !== 0)
    return {
      ...base,
      ok: false,
      detail: `${label} has mode ${found.mode.toString(8)} owner uid ${found.uid}, want ${mode} root`,
      fix: change(file.kind, 'replace', file.path, `reinstall ${file.path} as root ${mode}`),
    };
  return { ...base, ok: true, detail: `${label} intact`, fix: undefined };
}

/**
 * Everything the playbook leaves on the host, checked: the steps' findings about the host that come
 * first (a NIC's configuration in its manager, from which its kernel state follows), then per NIC
 * every step's findings, then ibfleet's files, then the steps' findings about the host.
 */
export function assessHost(playbook: Playbook, ctx: HostContext, files: readonly RenderedFile[]): Assessment {
  const { host, fleet, facts } = ctx;
  const hostParts = playbook.steps.map((s) => s.step.hostFindings?.(ctx, files) ?? {});
  const findings = [
    ...hostParts.flatMap((p) => p.before ?? []),
    ...host.nics.flatMap((nic) => playbook.steps.flatMap((s) => s.step.nicFindings?.(ctx, nic) ?? [])),
    ...files.map((f) =>
      fileFinding(f, host, facts, (file) =>
        playbook.steps.map((s) => s.step.modifiedWhy?.(ctx, file)).find((why) => why !== undefined),
      ),
    ),
    ...hostParts.flatMap((p) => p.after ?? []),
  ];
  // What a step provides before the routing applies (a NIC's address, provisioned by the playbook) blocks nothing.
  const nics = nicBlockers(host, fleet, facts).filter((b) => !providedFor(b, ctx.provisions ?? []));
  return {
    blockers: [...hostBlockers(facts), ...nics, ...playbook.steps.flatMap((s) => s.step.blockers?.(ctx) ?? [])],
    findings,
  };
}

export function failingFindings(assessment: Pick<Assessment, 'findings'>): Finding[] {
  return assessment.findings.filter((f) => !f.ok);
}

/** Failing findings deploy can change, as planned changes. */
export function plannedChanges(assessment: Pick<Assessment, 'findings'>): Change[] {
  return failingFindings(assessment).flatMap((f) => (f.fix ? [f.fix] : []));
}

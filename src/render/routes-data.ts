/**
 * The routing program's data for one host, /etc/ibfleet/routes.conf: everything of the host the
 * program (host/ibfleet-routes, the same on every host) needs — its number, the fabric's subnet,
 * one line per fabric NIC (interface, address, table, rule priority, NIC number, and another
 * fabric address for `ip route get`), then each step's lines in the playbook's order, then the
 * checksums of ibfleet's other files. One setting per line, words only: the program checks every
 * line before it acts and refuses (exit 2, nothing changed) data of another version or a line it
 * does not understand. Short enough to read in a diff. Pure.
 */
import { IFACE_NAME } from '../inventory/schema.js';
import type { Playbook } from '../playbook/playbook.js';
import { renderHeader } from '../script/header.js';
import { ROUTES_DATA_PATH, ROUTING_SCRIPT_PATH } from '../script/paths.js';
import type { RenderContext } from '../steps/step.js';
import { VERSION } from '../version.js';
import { fileCheckRows, type FileCheck } from './check-files.js';
import { probePeerAddress } from './probe-script.js';

/** The data; `version`: the program's (ROUTES_PROGRAM_VERSION), `files`: ibfleet's other files as --check compares them. */
export function renderRoutesData(
  playbook: Playbook,
  ctx: RenderContext,
  version: string,
  files: readonly FileCheck[],
): string {
  const { host, fleet } = ctx;
  return [
    renderHeader(host, ctx.playbook, ROUTES_DATA_PATH),
    `# What ${ROUTING_SCRIPT_PATH} (the same program on every host) does on this host.`,
    `ibfleet-routes ${version}`,
    `rendered ${VERSION} ${ctx.playbook}`,
    `host ${host.id}`,
    `subnet ${fleet.fabric.subnetText}`,
    ...host.nics.map(
      (n) =>
        // A name the inventory would refuse is not written (the program refuses the line: exit 2).
        `nic ${IFACE_NAME.test(n.iface) ? n.iface : '-'} ${n.address} ${n.table} ${n.priority} ${n.index} ${probePeerAddress(fleet, host, n.index)}`,
    ),
    ...playbook.steps.flatMap((s) => s.step.routesData?.(ctx) ?? []),
    ...fileCheckRows(files),
    '',
  ].join('\n');
}

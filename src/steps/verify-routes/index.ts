/**
 * The `verify-routes` step: on the host, `ip route get <another fabric address> from ADDR` leaves
 * through the NIC that owns ADDR, by its table — the kernel's own answer to "which NIC would this
 * traffic take", asked for every NIC, by the probe and by the routing script's --check. What the
 * other steps check (one rule per address, the table routes, ibfleet's files intact) is checked
 * with them. Read-only. Pure.
 */
import { z } from 'zod';
import { nicFinding, type StepModule } from '../step.js';

/** Under --check, per NIC: the same question on the host, said as the finding below says it. */
const ROUTE_GET_CHECK = `	# The kernel's own answer: traffic from this address leaves through this NIC, by its table.
	got=$(ip -4 -o route get "$peer" from "$addr" 2>&1 | sed 's/\\\\/ /g' | normalize)
	got_dev=$(printf '%s\\n' "$got" | awk '{ for (i = 1; i < NF; i++) if ($i == "dev") { print $(i + 1); exit } }')
	got_table=$(printf '%s\\n' "$got" | awk '{ for (i = 1; i < NF; i++) if ($i == "table") { print $(i + 1); exit } }')
	if [ "$got_dev" != "$iface" ] || [ "$got_table" != "$table" ]; then
		drift "$iface: traffic from $addr leaves through \${got_dev:-nowhere}\${got_table:+ (table $got_table)}$([ -n "$got_dev" ] || printf ' — %s' "$got")"
	fi`;

export const verifyRoutes: StepModule<Record<string, never>> = {
  name: 'verify-routes',
  summary: "on the host: traffic from each NIC's address leaves through that NIC (ip route get)",
  params: z.strictObject({}),
  use: () => ({
    name: 'verify-routes',
    script: () => ({ nicChecks: [ROUTE_GET_CHECK] }),
    nicFindings: ({ facts }, nic) => {
      const got = facts.routeGet.get(nic.iface);
      const ok = got?.dev === nic.iface && got.table === String(nic.table);
      return [
        nicFinding(
          nic,
          'route-get',
          `route-get ${nic.iface}`,
          ok,
          ok
            ? `${nic.iface}: traffic from ${nic.address} leaves through ${nic.iface} (table ${nic.table})`
            : `${nic.iface}: traffic from ${nic.address} leaves through ${got?.dev ?? 'nowhere'}${got?.table ? ` (table ${got.table})` : ''}${got && !got.dev ? ` — ${got.text}` : ''}`,
        ),
      ];
    },
  }),
};

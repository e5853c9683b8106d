/**
 * The `verify-routes` step: on the host, `ip route get <another fabric address> from ADDR` leaves
 * through the NIC that owns ADDR, by its table — the kernel's own answer to "which NIC would this
 * traffic take", asked for every NIC, by the probe and by the routing script's --check. What the
 * other steps check (one rule per address, the table routes, ibfleet's files intact) is checked
 * with them. Read-only. Pure.
 */
import * as z from 'zod';
import { nicFinding, type StepModule } from '../step.js';

export const verifyRoutes: StepModule<Record<string, never>> = {
  name: 'verify-routes',
  summary: "on the host: traffic from each NIC's address leaves through that NIC (ip route get)",
  params: z.strictObject({}),
  use: () => ({
    name: 'verify-routes',
    // host/ibfleet-routes: route_get_check, per NIC under --check.
    routesData: () => ['route-get'],
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

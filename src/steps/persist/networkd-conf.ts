/**
 * The networkd.conf drop-in of the netplan hook (paths.ts NETWORKD_CONF_PATH). systemd-networkd
 * 248+ removes, when it starts and when it reconfigures a link, every routing rule and route it did
 * not configure itself (ManageForeignRoutingPolicyRules=, ManageForeignRoutes=, both yes by
 * default): ibfleet's rules and table routes go, and the kernel's subnet route comes back to main.
 * After a reconfigure networkd-dispatcher reports the link `configured` and the configured.d hook
 * puts them back; after a restart (a package upgrade, `systemctl restart systemd-networkd`) it
 * reports nothing — the link's states are the ones it knew — so no hook runs. With the drop-in,
 * networkd leaves rules and routes it did not make alone from its next start on (networkd reads
 * networkd.conf only when it starts). networkd before 248 ignores a key it does not know, with a
 * warning in its log. Pure.
 */
import type { Host } from '../../inventory/model.js';
import { renderHeader } from '../../script/header.js';
import { hostFile } from '../../script/host-templates.js';
import { NETWORKD_CONF_PATH } from './paths.js';

/** host/files/networkd-foreign.conf: networkd leaves the rules and routes it did not make. */
export function renderNetworkdConf(host: Host, playbook: string): string {
  return hostFile('networkd-foreign.conf', { HEADER: renderHeader(host, playbook, NETWORKD_CONF_PATH).split('\n') });
}

/**
 * What the links step may be asked for a fabric NIC, as the playbook gives it and a host overrides
 * it in the inventory (`links:` on the host or in `defaults`): the IPoIB mode, the MTU, a partition
 * (P_Key) and, for RoCE ports, the RDMA CM's default RoCE mode. Nothing asked means only the
 * convention address. Refusals that need no hardware (a P_Key of 0 or 0x8000) are made here, when
 * the playbook or inventory is loaded, with file:line:col. Pure.
 */
import * as z from 'zod';
import type { Host } from '../../inventory/model.js';

export const IPOIB_MODES = ['datagram', 'connected'] as const;
export type IpoibMode = (typeof IPOIB_MODES)[number];
export const ROCE_MODES = ['v1', 'v2'] as const;
export type RoceMode = (typeof ROCE_MODES)[number];

/** IPoIB's largest MTU (connected mode: 64 KiB less IPoIB's 16-byte reserve). */
export const CONNECTED_MTU = 65520;
/** The smallest MTU IPv4 takes. */
export const MIN_MTU = 68;

const PKEY_TEXT = /^(0x[0-9a-f]{1,4}|[0-9]{1,5})$/i;

/**
 * A P_Key as given (0x8002, 0x0002, or text of those; a loaded file's decimal spelling is refused
 * where it stands: HEX_PARAMS) → its full-membership form as the
 * kernel names the child interface (`0x8002`): the membership bit is what IPoIB joins with, and a
 * limited member (0x0002) could not reach the other limited members of its partition. 0 is no
 * P_Key and 0x8000 its full-member form (invalid in every partition table).
 */
const pkey = z
  .union([z.int(), z.string()], { error: 'pkey is a partition key such as 0x8002' })
  .transform((value, ctx) => {
    const text = String(value).trim();
    const number = PKEY_TEXT.test(text) ? Number(text) : Number.NaN;
    if (!Number.isInteger(number) || number > 0xffff) {
      ctx.addIssue({ code: 'custom', message: 'pkey is a 16-bit partition key, 0x0001..0xffff, e.g. 0x8002' });
      return z.NEVER;
    }
    if ((number & 0x7fff) === 0) {
      ctx.addIssue({
        code: 'custom',
        message: `pkey 0x${number.toString(16).padStart(4, '0')} is not a partition: 0 and 0x8000 are invalid P_Keys; allowed: 0x0001..0x7fff (written as full member 0x8001..0xffff)`,
      });
      return z.NEVER;
    }
    return `0x${(number | 0x8000).toString(16).padStart(4, '0')}`;
  });

/** The step's parameters and a host's overrides alike: every field optional. */
export const linksSettings = z.strictObject({
  mode: z.enum(IPOIB_MODES, { error: 'mode is datagram or connected (IPoIB)' }).optional(),
  mtu: z
    .int({ error: `mtu is a whole number of bytes, ${MIN_MTU}..${CONNECTED_MTU}` })
    .min(MIN_MTU, { error: `mtu is at least ${MIN_MTU}` })
    .max(CONNECTED_MTU, { error: `mtu is at most ${CONNECTED_MTU} (IPoIB connected mode)` })
    .optional(),
  pkey: pkey.optional(),
  roceMode: z.enum(ROCE_MODES, { error: 'roceMode is v1 or v2 (RoCE ports only)' }).optional(),
});

export type LinksParams = z.infer<typeof linksSettings>;

/** The parameters written in hex, and what each is: `pkey: 8002` is decimal 8002 to YAML, never the 0x8002 meant. */
export const HEX_PARAMS: Readonly<Record<string, string>> = { pkey: 'a P_Key' };

/** The key hosts override the step's parameters under in the inventory. */
export const LINKS_KEY = 'links';

/** What the host is asked for: the playbook's parameters, the inventory's `links:` (defaults, then the host) over them. */
export function settingsFor(host: Host, params: LinksParams): LinksParams {
  const own = host.overrides?.[LINKS_KEY] as LinksParams | undefined;
  return { ...params, ...own };
}

/** A P_Key child's interface name as the kernel makes it: `ib0.8002`. */
export function childName(parent: string, pkey: string): string {
  return `${parent}.${pkey.slice(2)}`;
}

/** `ib0.8002` → its parent and P_Key, when the name is a P_Key child's. */
export function splitChild(iface: string): { readonly parent: string; readonly pkey: string } | undefined {
  const match = /^(.+)\.([0-9a-f]{4})$/.exec(iface);
  return match ? { parent: match[1]!, pkey: `0x${match[2]}` } : undefined;
}

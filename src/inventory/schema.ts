/**
 * The inventory's shape as a zod schema. Field-level rules live here (with messages that say
 * what is allowed); rules that relate fields to each other live in load.ts.
 */
import * as z from 'zod';
import { MAX_NICS } from './derive.js';
import { MANAGERS, type HostOverride } from './model.js';
import { readsAsSelection } from './select.js';

/** Linux IFNAMSIZ is 16 including the NUL; the characters are those that never need shell quoting. */
/** A leading dash would read as an option to ip(8), and `--all` is ifupdown's "every interface" event. */
export const IFACE_NAME = /^[A-Za-z0-9_.][A-Za-z0-9_.-]{0,14}$/;
export const IFACE_RULE = '1-15 characters of A-Z a-z 0-9 _ . -, not starting with -, not "." or ".."';

export const HOST_NAME = /^[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$/;
/**
 * A management address: a host name (DNS labels of letters, digits, dashes, dots between them; an
 * ssh_config alias may have underscores) or an IP address (IPv4 is a host name by this rule; IPv6
 * as colon-separated hex, no brackets). It reaches ssh, ssh_config matching and an exported
 * Ansible inventory: a blank, a `;`, a leading `-` (`-oProxyCommand=...`) or `{{ }}` never does.
 */
export const ADDRESS = /^(?:[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,251}[A-Za-z0-9_])?|[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*)$/;
export const ADDRESS_RULE =
  'a host name (letters, digits, dots, dashes, underscores; not starting or ending with - or .) or an IP address';

export const ROLE_NAME = /^[a-z][a-z0-9_-]{0,31}$/;
export const OWNER_NAME = /^[a-z_][a-z0-9_.-]{0,31}$/;
export const USER_NAME = /^[a-z_][a-z0-9_.-]{0,31}\$?$/;

const ifaceName = z
  .string({ error: 'an interface name must be a string' })
  .regex(IFACE_NAME, { error: (issue) => ifaceNameProblem(issue.input) })
  .refine((s) => s !== '.' && s !== '..', { error: `not a valid Linux interface name (${IFACE_RULE})` });

/**
 * Why a name is not an interface name. `[ib0 ib1]` is YAML for the one item "ib0 ib1": names
 * split by spaces that are each valid meant a list, and the fix is the comma.
 */
export function ifaceNameProblem(input: unknown): string {
  const words = typeof input === 'string' ? input.trim().split(/\s+/) : [];
  if (words.length > 1 && words.every((w) => IFACE_NAME.test(w) && /[A-Za-z]/.test(w)))
    return `one name with spaces in it: a missing comma? write [${words.join(', ')}]`;
  return `not a valid Linux interface name (${IFACE_RULE})`;
}

/** NICs per host: up to 16, as multi-rail GPU nodes carry (8 compute NICs, often 2 more for storage). */
export const NIC_COUNT_RULE = `1..${MAX_NICS}`;
const nicCount = z
  .int({ error: `nics is a whole number ${NIC_COUNT_RULE}` })
  .min(1, { error: `nics is ${NIC_COUNT_RULE}` })
  .max(MAX_NICS, {
    error: `nics is ${NIC_COUNT_RULE} (NIC n is the last octet of its address and table tableBase + n)`,
  });

const managerSetting = z.enum(['auto', ...MANAGERS], {
  error: `unknown manager (allowed: auto, ${MANAGERS.join(', ')})`,
});

/** Host fields that may also be given under `defaults`. */
const hostCommon = {
  role: z.string().regex(ROLE_NAME, { error: 'a role is a lower-case word (a-z, 0-9, _ -), e.g. cpu' }),
  user: z.string().regex(USER_NAME, { error: 'not a valid Unix user name' }),
  port: z
    .int({ error: 'a port is a whole number 1..65535' })
    .min(1, { error: 'a port is 1..65535' })
    .max(65535, { error: 'a port is 1..65535' }),
  sudo: z.boolean({ error: 'sudo is true or false' }),
  interfaces: z.array(ifaceName, { error: 'interfaces is a list of interface names, NIC 1 first' }),
  // A host's own count overrides the fabric's: 8-NIC GPU nodes beside 2-NIC CPU servers.
  nics: nicCount,
  manager: managerSetting,
  identityFile: z.string().min(1, { error: 'identityFile is a path to a private key' }),
};

export const defaultsSchema = z.strictObject(hostCommon).partial();

export const hostSchema = z
  .strictObject({
    ...hostCommon,
    name: z
      .string()
      .regex(HOST_NAME, { error: 'a host name is letters, digits, dots and dashes' })
      // --hosts 16 is host 16 whatever is named 16: a name that reads as a selection could never select its host.
      .refine((name) => !readsAsSelection(name), {
        error: 'a host name --hosts can select by name: not a number, a range (16-20) or all',
      }),
    address: z
      .string({ error: `address is the management (SSH) address: ${ADDRESS_RULE}` })
      .regex(ADDRESS, { error: `address is the management (SSH) address: ${ADDRESS_RULE}` }),
  })
  .partial();

export const pairSchema = z.strictObject({
  owner: z
    .string({ error: 'owner is required' })
    .regex(OWNER_NAME, { error: 'an owner is a user-style name (a-z, 0-9, _ . -)' }),
  cpu: z.int({ error: 'cpu is a host number' }),
  mem: z.int({ error: 'mem is a host number' }),
});

export const fabricSchema = z.strictObject({
  subnet: z.string({ error: 'subnet is an IPv4 network like 172.16.0.0/16' }),
  nics: nicCount.default(2),
  // false: plain Ethernet NICs without RDMA; status then skips the RDMA port checks.
  rdma: z
    .boolean({
      error:
        'rdma is true (the NICs are InfiniBand / RoCE HCAs, the default) or false (plain Ethernet: no RDMA checks)',
    })
    .default(true),
  tableBase: z
    .int({ error: 'tableBase is a whole number' })
    .min(1, { error: 'tableBase must be at least 1' })
    .max(2 ** 31 - 10, { error: 'tableBase is too large (rule priorities tableBase + NIC stay below 32766)' })
    .default(940),
});

export const sshSchema = z
  .strictObject({
    knownHosts: z.string().min(1),
    identityFile: z.string().min(1),
    config: z.string().min(1),
  })
  .partial();

export const inventorySchema = z.strictObject({
  fabric: fabricSchema,
  defaults: defaultsSchema.default({}),
  // nullable(), not a union with z.null(): a union hides the field's own message ("unknown
  // manager (allowed: …)") behind zod's generic "Invalid input".
  hosts: z.record(z.string(), hostSchema.nullable(), { error: 'hosts is a map of host number → host' }),
  pairs: z.array(pairSchema, { error: 'pairs is a list of { owner, cpu, mem }' }).default([]),
  ssh: sshSchema.default({}),
});

export type InventoryInput = z.infer<typeof inventorySchema> & { readonly defaults: Readonly<Record<string, unknown>> };
export type HostInput = z.infer<typeof hostSchema> & Readonly<Record<string, unknown>>;

/** The schemas an inventory is checked with: the fixed ones, with the steps' host overrides (HostOverride) added to hosts and defaults. */
export interface InventorySchemas {
  readonly inventory: z.ZodType<InventoryInput>;
  readonly defaults: { readonly keys: readonly string[] };
  readonly host: { readonly keys: readonly string[] };
  readonly overrides: readonly HostOverride[];
}

export function inventorySchemas(overrides: readonly HostOverride[]): InventorySchemas {
  const extra = Object.fromEntries(overrides.map((o) => [o.key, o.schema.optional()]));
  const defaults = defaultsSchema.extend(extra);
  const host = hostSchema.extend(extra);
  return {
    inventory: inventorySchema.extend({
      defaults: defaults.default({}),
      hosts: z.record(z.string(), host.nullable(), { error: 'hosts is a map of host number → host' }),
    }) as unknown as z.ZodType<InventoryInput>,
    defaults: { keys: Object.keys(defaults.shape) },
    host: { keys: Object.keys(host.shape) },
    overrides,
  };
}

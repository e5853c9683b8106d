/** The validated, derived fleet that every other part of ibfleet works from. */
import type * as z from 'zod';
import type { Cidr } from './ipv4.js';

export const MANAGERS = ['networkmanager', 'ifupdown', 'netplan'] as const;
export type Manager = (typeof MANAGERS)[number];
export type ManagerSetting = Manager | 'auto';

export interface Nic {
  /** 1-based NIC number: the last octet of its address. */
  readonly index: number;
  readonly iface: string;
  readonly address: string;
  readonly prefixLength: number;
  readonly table: number;
  readonly priority: number;
}

export interface Host {
  /** Host number 1..254: the third octet of its fabric addresses. */
  readonly id: number;
  /** Display name: `name` from the inventory, else `host<id>`. */
  readonly name: string;
  /** What SSH connects to: `address`, else `name` (which ~/.ssh/config may map further). */
  readonly target: string;
  readonly address: string | undefined;
  readonly role: string | undefined;
  /** Unset: ~/.ssh/config's User applies, else root. */
  readonly user: string | undefined;
  /** Unset: ~/.ssh/config's Port applies, else 22. */
  readonly port: number | undefined;
  /** Unset: sudo exactly when the resolved user is not root. */
  readonly sudo: boolean | undefined;
  readonly manager: ManagerSetting;
  readonly identityFile: string | undefined;
  readonly nics: readonly Nic[];
  /**
   * The settings a step lets a host override (`links:` on the host or in `defaults`), validated
   * against the step's own schema when the inventory was loaded (HostOverride), the host's over
   * the defaults' key by key. A step reads its own with `host.overrides?.[key]`; the inventory
   * knows none of them.
   */
  readonly overrides?: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
}

/**
 * A step's settings a host may override in the inventory, injected by whoever loads one (the
 * commands and runners pass the registry's, src/steps/registry.ts HOST_OVERRIDES): the key (one
 * per step that has overrides) and the schema of its value, checked with file:line:col like every
 * other field.
 */
export interface HostOverride {
  readonly key: string;
  /** A strict object of optional fields: what the host may set, each with its message. */
  readonly schema: z.ZodType<Readonly<Record<string, unknown>>>;
  /** Its fields (for "allowed here" when a key is unknown). */
  readonly keys: readonly string[];
  /** Fields written in hex (`pkey: 0x8002`), each with what it is ("a P_Key"); every other number is a plain decimal. */
  readonly hex?: Readonly<Record<string, string>>;
}

export interface Pair {
  readonly owner: string;
  readonly cpu: number;
  readonly mem: number;
}

export interface Fabric {
  readonly subnet: Cidr;
  /** `172.16.0.0/16` as written. */
  readonly subnetText: string;
  readonly nics: number;
  readonly tableBase: number;
  /** false: plain Ethernet NICs (no RDMA device); status skips the RDMA port checks. */
  readonly rdma: boolean;
}

/** SSH settings an inventory may carry (the lab's inventory points at its own key and known_hosts). */
export interface SshSettings {
  readonly knownHosts: string | undefined;
  readonly identityFile: string | undefined;
  readonly config: string | undefined;
}

export interface Fleet {
  /** The inventory file as given (for messages). */
  readonly file: string;
  readonly fabric: Fabric;
  /** Sorted by host number. */
  readonly hosts: readonly Host[];
  readonly pairs: readonly Pair[];
  readonly ssh: SshSettings;
}

export function hostById(fleet: Fleet, id: number): Host | undefined {
  return fleet.hosts.find((h) => h.id === id);
}

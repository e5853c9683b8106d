/** The source inventory the lab unit tests plan from: the seeds' two machines, inline so the tests stand alone. */
import { loadInventory } from '../../src/inventory/load.js';
import type { Fleet } from '../../src/inventory/model.js';

export const SEEDS_INVENTORY = `fabric:
  subnet: 172.16.0.0/16
  nics: 2
  tableBase: 940
defaults:
  user: root
  interfaces: [ib0, ib1]
  manager: auto
hosts:
  16: { name: cpuserver16, address: 10.208.130.16, role: cpu, interfaces: [ibs5f0, ibs5f1], manager: networkmanager }
  34: { name: memserver34, address: 10.208.130.34, role: mem, manager: netplan }
pairs:
  - { owner: alice, cpu: 16, mem: 34 }
`;

export function seedsFleet(text = SEEDS_INVENTORY): Fleet {
  return loadInventory(text, 'seeds.yaml');
}

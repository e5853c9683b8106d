/**
 * The rehearsal lab's programmatic API, used by `ibfleet lab` and by every end-to-end test:
 * bring a lab up, run commands in its hosts, reboot hosts, flap their NICs, restart their managers,
 * take it down.
 */
export { labDown, labDownAll, listLabs, type LabDownResult } from './down.js';
export { emulationLabel } from './emulation.js';
export { labExec, type LabExecOptions, type LabRef } from './exec.js';
export type { LabHostInfo, LabInfo } from './info.js';
export { DEFAULT_LAB_NAME, hostNamespace, labPaths } from './names.js';
export { DEFAULT_CONTROLLER_ADDRESS, DEFAULT_MGMT_SUBNET } from './options.js';
export { labFlap, type LabFlap } from './flap.js';
export { labReboot, type HostReboot } from './reboot.js';
export { labRestartManager, type LabRestart } from './restart.js';
export type { RunResult } from './system.js';
export { labUp, type LabUpOptions } from './up.js';
export { labGid, labPkey, labPort, labSm, type PortChange } from './rdma.js';
export { labArpFlux, type LabArpFluxResult } from './arp.js';

/**
 * `lab up`: builds every namespace, link, mount and sshd of a plan, or — if any step fails — removes
 * what it built, so a lab is either up or absent. An existing lab of that name is never touched.
 */
import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { dirname, join } from 'node:path';
import pLimit from 'p-limit';
import { LabError, UsageError, tail } from '../errors.js';
import { loadInventory } from '../inventory/load.js';
import { HOST_OVERRIDES } from '../steps/registry.js';
import type { Fleet, Manager } from '../inventory/model.js';
import { foldHosts } from '../inventory/select.js';
import { PACKAGE_ROOT } from '../package-root.js';
import { labDown } from './down.js';
import { HOST_KEY_VIEW_PATH, renderHostView } from './emulation.js';
import { labInfo, type LabInfo } from './info.js';
import { renderKnownHosts, renderLabInventory } from './lab-inventory.js';
import { LAB_ROOT, NETNS_DIR, backingPath, hostPaths, isLabNamespace, labNameOption, labPaths } from './names.js';
import { conflictingRoutes, planLab, runsSystemd, subnetsOverlap, type LabPlan } from './plan.js';
import { checkPreflight, type LabTools, type PreflightProbe } from './preflight.js';
import { renderCreateBatch, renderHostStartScript, renderRootLinkBatch, renderSwitchScript } from './scripts.js';
import { raiseNeighbourTable } from './neigh.js';
import { hasRdma, writeRpingStandIn, writeSysfsLayer } from './rdma.js';
import { labSummaries, writeLabState } from './state.js';
import { run, runOk } from './system.js';
import { ensureSuiteRoots, hasRoot, rootsDirFrom, type SuiteVersions } from './roots.js';
import type { Suite } from './suites.js';
import type { LabLinkLayer } from './names.js';

type HostMap<T> = ReadonlyMap<number, T> | Readonly<Record<number, T>>;

export interface LabUpOptions {
  /** Default `default`. */
  readonly name?: string;
  /** Host numbers; default: the hosts of the source inventory. */
  readonly hosts?: readonly number[];
  /** Default 198.18.0.0/24; two labs at once need different ones. */
  readonly mgmtSubnet?: string;
  readonly controllerAddress?: string;
  readonly managers?: HostMap<Manager>;
  readonly interfaces?: HostMap<readonly string[]>;
  /** Fabric NICs per host: `all` for every host, `hosts` for some (see LabPlanInput). */
  readonly nics?: { readonly all?: number; readonly hosts?: HostMap<number> };
  /** The source inventory; default: the seeds' example shipped with ibfleet (inventory/fleet.yaml). */
  readonly fleet?: Fleet;
  /**
   * Default true: every host runs its real network manager. false only for labs too big to afford a
   * daemon per host (the benchmark's): the lab then adds the fabric addresses itself.
   */
  readonly networkDaemons?: boolean;
  /** Hosts that show no RDMA device (no /sys/class/infiniband entry, no rping). */
  readonly noRdma?: readonly number[];
  /** Hosts that run no systemd (a container, a chroot-like host): no timers, the real systemctl answers offline. */
  readonly noSystemd?: readonly number[];
  /** Hosts as a new machine arrives: fabric NICs present, no address and no configuration for them. */
  readonly fresh?: readonly number[];
  /** Hosts without python3 on their PATH (verify's prober falls back to fping or ping there). */
  readonly noPython3?: readonly number[];
  /** Hosts with fping on their PATH (the machine's, from scripts/setup); every other host lacks it. */
  readonly fping?: readonly number[];
  /** The Debian release of hosts' roots (lab up --suite): `all`, or per host; default the machine's own /usr. */
  readonly suites?: { readonly all?: Suite; readonly hosts?: HostMap<Suite> };
  /** The link layer of hosts' RDMA ports: `all`, or per host; default InfiniBand. */
  readonly linkLayers?: { readonly all?: LabLinkLayer; readonly hosts?: HostMap<LabLinkLayer> };
  /** Hosts started at once (default 8: the work is mostly short processes waiting on the kernel). */
  readonly concurrency?: number;
  readonly probe?: PreflightProbe;
  /** Progress, one line per step. */
  readonly onStep?: (text: string) => void;
}

const SSH_WAIT_MS = 15_000;

function toMap<T>(value: HostMap<T> | undefined): ReadonlyMap<number, T> | undefined {
  if (value === undefined || value instanceof Map) return value as ReadonlyMap<number, T> | undefined;
  return new Map(Object.entries(value).map(([k, v]) => [Number(k), v as T]));
}

export async function defaultFleet(): Promise<Fleet> {
  const file = join(PACKAGE_ROOT, 'inventory/fleet.yaml');
  return loadInventory(await readFile(file, 'utf8'), file, dirname(file), HOST_OVERRIDES);
}

export async function labUp(options: LabUpOptions = {}): Promise<LabInfo> {
  const fleet = options.fleet ?? (await defaultFleet());
  const plan = planLab({
    fleet,
    name: options.name,
    hosts: options.hosts,
    mgmtSubnet: options.mgmtSubnet,
    controllerAddress: options.controllerAddress,
    managers: toMap(options.managers),
    interfaces: toMap(options.interfaces),
    ...(options.nics
      ? {
          nics: {
            ...(options.nics.all !== undefined ? { all: options.nics.all } : {}),
            ...(options.nics.hosts ? { hosts: toMap(options.nics.hosts)! } : {}),
          },
        }
      : {}),
    ...(options.networkDaemons !== undefined ? { networkDaemons: options.networkDaemons } : {}),
    ...(options.noRdma ? { noRdma: options.noRdma } : {}),
    ...(options.noSystemd ? { noSystemd: options.noSystemd } : {}),
    ...(options.fresh ? { fresh: options.fresh } : {}),
    ...(options.noPython3 ? { noPython3: options.noPython3 } : {}),
    ...(options.fping ? { fping: options.fping } : {}),
    ...(options.suites
      ? {
          suites: {
            ...(options.suites.all !== undefined ? { all: options.suites.all } : {}),
            ...(options.suites.hosts ? { hosts: toMap(options.suites.hosts)! } : {}),
          },
        }
      : {}),
    ...(options.linkLayers
      ? {
          linkLayers: {
            ...(options.linkLayers.all !== undefined ? { all: options.linkLayers.all } : {}),
            ...(options.linkLayers.hosts ? { hosts: toMap(options.linkLayers.hosts)! } : {}),
          },
        }
      : {}),
    rootsDir: rootsDirFrom(),
  });
  // The machine's managers and systemctl matter for the hosts on its own /usr only.
  const own = plan.hosts.filter((h) => h.suite === undefined);
  if (own.some((h) => h.fping) && !existsSync('/usr/bin/fping'))
    throw new UsageError(
      '--with-fping: fping is not installed on this machine (scripts/setup installs it: apt install fping)',
    );
  const suites = [...new Set(plan.hosts.flatMap((h) => (h.suite !== undefined ? [h.suite] : [])))];
  const toBuild = suites.filter((s) => !hasRoot(plan.rootsDir!, s));
  const managers = plan.networkDaemons ? [...new Set(own.map((h) => h.manager))] : [];
  const tools = checkPreflight(
    { managers, systemd: own.some(runsSystemd), ...(toBuild.length ? { rootBuilder: true } : {}) },
    options.probe,
  );
  const roots = suites.length
    ? await ensureSuiteRoots(plan.rootsDir!, suites, options.onStep ?? (() => undefined))
    : undefined;
  await refuseLeftovers(plan);
  await refuseRouteConflict(plan);
  await claimStateDir(plan);
  try {
    await build(plan, tools, options, roots);
  } catch (error) {
    await labDown(plan.name).catch(() => undefined);
    throw error;
  }
  return labInfo(plan, roots);
}

async function refuseLeftovers(plan: LabPlan): Promise<void> {
  const down = `ibfleet lab down${labNameOption(plan.name)}`;
  if (existsSync(plan.dir)) {
    throw new UsageError(
      `lab ${plan.name} already exists (${plan.dir}); use it (inventory: ${labPaths(plan.name).inventory}) or, if it is yours, remove it first with: ${down}`,
    );
  }
  const namespaces = existsSync(NETNS_DIR)
    ? (await readdir(NETNS_DIR)).filter((ns) => isLabNamespace(plan.name, ns))
    : [];
  const leftovers = [
    ...namespaces,
    ...(existsSync(`/sys/class/net/${plan.rootLink}`) ? [`link ${plan.rootLink}`] : []),
  ];
  if (leftovers.length) {
    const shown =
      leftovers.length > 3
        ? `${leftovers.slice(0, 3).join(', ')} and ${leftovers.length - 3} more`
        : leftovers.join(', ');
    throw new UsageError(`leftovers of an earlier lab ${plan.name} exist (${shown}); remove them with: ${down}`);
  }
}

/**
 * The management subnet must be free: no other lab holds it (by its state, or by the route on its
 * link) and no real network is routed there. A lab in the way is named with the command that removes it.
 */
async function refuseRouteConflict(plan: LabPlan): Promise<void> {
  const listed = await runOk('lab up: read routes', ['ip', '-j', '-4', 'route', 'show', 'table', 'main']);
  const routes = JSON.parse(listed.stdout || '[]') as { dst?: string; dev?: string }[];
  const clashes = conflictingRoutes(routes, plan.mgmtSubnet);
  const labs = (await labSummaries()).filter((l) => l.name !== plan.name);
  const clashingLinks = new Set(
    routes.filter((r) => conflictingRoutes([r], plan.mgmtSubnet).length > 0).map((r) => r.dev),
  );
  const holder =
    labs.find((l) => subnetsOverlap(l.mgmtSubnet, plan.mgmtSubnet)) ?? labs.find((l) => clashingLinks.has(l.rootLink));
  const another = `198.18.${(Number(plan.mgmtSubnet.split('.')[2]) + 1) % 256}.0/24`;
  if (holder) {
    throw new UsageError(
      `the management subnet ${plan.mgmtSubnet} is held by lab ${holder.name} (${holder.status}, hosts ${foldHosts(holder.hosts)}, ${holder.mgmtSubnet}, inventory ${holder.inventory}); ` +
        `pick another with --mgmt-subnet, e.g. ${another}, or if that lab is yours remove it with: ibfleet lab down${labNameOption(holder.name)}`,
    );
  }
  if (clashes.length) {
    throw new UsageError(
      `the management subnet ${plan.mgmtSubnet} is already routed on this machine (${clashes.join('; ')}): another lab or a real network uses it; pick another with --mgmt-subnet, e.g. ${another}`,
    );
  }
}

/** Creating the lab's directory is the lock: of two `lab up --name X` at once, one gets EEXIST. */
async function claimStateDir(plan: LabPlan): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    await mkdir(LAB_ROOT, { recursive: true, mode: 0o755 });
    try {
      await mkdir(plan.dir, { mode: 0o700 });
      return;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      // ENOENT: a concurrent `lab down` removed the (then empty) lab root; make it again.
      if (code === 'ENOENT' && attempt < 3) continue;
      if (code === 'EEXIST') throw new UsageError(`lab ${plan.name} is being created or already exists (${plan.dir})`);
      throw error;
    }
  }
}

async function build(
  plan: LabPlan,
  tools: LabTools,
  options: LabUpOptions,
  roots: SuiteVersions | undefined,
): Promise<void> {
  const step = options.onStep ?? (() => undefined);
  const paths = labPaths(plan.name);
  // Mount-namespace files can only be bound inside a private mount.
  await runOk('lab up: private mount', ['mount', '--bind', plan.dir, plan.dir]);
  await runOk('lab up: private mount', ['mount', '--make-private', plan.dir]);
  await writeLabState({ status: 'starting', plan, ...(roots ? { roots } : {}) });
  await runOk('lab up: lab key', [
    'ssh-keygen',
    '-q',
    '-t',
    'ed25519',
    '-N',
    '',
    '-C',
    `ibfleet-lab-${plan.name}`,
    '-f',
    paths.identity,
  ]);
  const publicKey = await readFile(`${paths.identity}.pub`, 'utf8');

  // Every namespace's neighbour entries count against the machine's one table.
  const neigh = await raiseNeighbourTable(plan);
  if (neigh)
    step(
      `neighbour table limits for the labs up: gc_thresh1/2/3 ${neigh.gc_thresh1}/${neigh.gc_thresh2}/${neigh.gc_thresh3} (put back by the last lab down)`,
    );

  step(`writing the /etc, /root and /run of ${plan.hosts.length} host(s)`);
  await Promise.all(plan.hosts.map((h) => writeHostFiles(plan, h.id, publicKey)));
  if (plan.hosts.some(hasRdma)) await writeRpingStandIn(plan);
  await Promise.all(plan.hosts.filter(hasRdma).map((h) => writeSysfsLayer(plan, h)));

  step(`creating ${plan.hosts.length + 1} network namespaces and their links`);
  await createNetwork(plan);

  step(`booting ${plan.hosts.length} host(s): mounts, addresses, sshd`);
  const limit = pLimit(options.concurrency ?? 8);
  await Promise.all(
    plan.hosts.map((h) =>
      limit(async () => {
        const result = await run(['sh', '-euc', renderHostStartScript(plan, h, tools.sshd)]);
        if (result.code !== 0)
          throw new LabError(`lab up: host ${h.id}`, `host ${h.id} (${h.name}) did not boot: exit ${result.code}`, {
            exitCode: result.code,
            stderrTail: tail(result.stderr || result.stdout, 8),
          });
      }),
    ),
  );

  step('waiting for every sshd');
  await Promise.all(
    plan.hosts.map((h) => limit(() => waitForPort(h.address, 22, SSH_WAIT_MS, `host ${h.id} (${h.name})`))),
  );

  const keys = await Promise.all(
    plan.hosts.map(async (h) => ({
      address: h.address,
      publicKey: await readFile(`${hostPaths(plan.name, h.id).upper}${HOST_KEY_VIEW_PATH}.pub`, 'utf8'),
    })),
  );
  await writeFile(paths.knownHosts, renderKnownHosts(keys), { mode: 0o644 });
  await writeFile(paths.inventory, renderLabInventory(plan), { mode: 0o644 });
  await writeLabState({ status: 'up', plan, ...(roots ? { roots } : {}) });
}

/** The lab's network: a namespace per host and the switch's, their links, and the management route on this machine. */
async function createNetwork(plan: LabPlan): Promise<void> {
  await runOk('lab up: namespaces and links', ['ip', '-batch', '-'], { input: renderCreateBatch(plan) });
  await runOk('lab up: switch', [
    'nsenter',
    `--net=${NETNS_DIR}/${plan.switchNamespace}`,
    'sh',
    '-euc',
    renderSwitchScript(plan),
  ]);
  const ipv6 = `/proc/sys/net/ipv6/conf/${plan.rootLink}/disable_ipv6`;
  if (existsSync(ipv6)) await writeFile(ipv6, '1');
  await runOk('lab up: management route', ['ip', '-batch', '-'], { input: renderRootLinkBatch(plan) });
}

async function writeHostFiles(plan: LabPlan, id: number, publicKey: string): Promise<void> {
  const host = plan.hosts.find((h) => h.id === id)!;
  const p = hostPaths(plan.name, id);
  for (const dir of [
    `${p.upper}/etc`,
    p.work,
    p.root,
    p.run,
    p.nmState,
    ...(host.suite !== undefined ? [p.newRoot] : []),
  ])
    await mkdir(dir, { recursive: true, mode: 0o755 });
  await chmod(p.root, 0o700);
  const view = renderHostView(plan, host, publicKey);
  for (const d of view.dirs) {
    const target = backingPath(p, d.path);
    await mkdir(target, { recursive: true });
    await chmod(target, d.mode);
  }
  for (const f of view.files) {
    const target = backingPath(p, f.path);
    await mkdir(dirname(target), { recursive: true });
    await writeFile(target, f.content, { mode: f.mode });
    await chmod(target, f.mode);
  }
  // Mount points for the namespace files.
  await writeFile(p.mountNs, '');
  await writeFile(p.utsNs, '');
}

function waitForPort(host: string, port: number, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const attempt = () => {
      const socket = connect({ host, port });
      let settled = false;
      const settle = (connected: boolean) => {
        if (settled) return;
        settled = true;
        socket.destroy();
        if (connected) resolve();
        else if (Date.now() > deadline)
          reject(new LabError('lab up: sshd', `${what}: sshd does not accept connections on ${host}:${port}`));
        else setTimeout(attempt, 100);
      };
      socket.setTimeout(1000);
      socket.once('connect', () => settle(true));
      socket.once('error', () => settle(false));
      socket.once('timeout', () => settle(false));
    };
    attempt();
  });
}

/**
 * `ibfleet lab up [--hosts S] [--name L] [--mgmt-subnet CIDR] …`: bring up a rehearsal lab (src/lab/).
 * This file is the command's face — its options and their schema; the run is
 * src/commands/lab-up-run.ts, loaded only when the command runs.
 */
import type { Command } from 'commander';
import type { CommandResult, Io } from './context.js';
import { collect, nameOption } from './lab-command.js';
import { readOptions, type OptionTools } from './options.js';

const upOptions = ({ z }: OptionTools) =>
  z.object({
    hosts: z.string().optional(),
    name: z.string(),
    mgmtSubnet: z.string().optional(),
    manager: z.array(z.string()),
    interfaces: z.array(z.string()),
    nics: z.array(z.string()),
    managers: z.boolean(),
    withoutRdma: z.string().optional(),
    withoutSystemd: z.string().optional(),
    fresh: z.string().optional(),
    withoutPython3: z.string().optional(),
    withFping: z.string().optional(),
    suite: z.array(z.string()),
    linkLayer: z.array(z.string()),
  });

export function registerLabUp(lab: Command, io: Io, done: (r: CommandResult) => void): void {
  lab
    .command('up')
    .description(
      "bring up lab hosts with the seeds' failure live (NIC 2 traffic fails); writes a lab inventory and known_hosts",
    )
    .option(
      '--hosts <numbers>',
      "host numbers and ranges, e.g. 16,34,40-47 (default: the inventory's hosts; others are added as node<H>)",
    )
    .option(...nameOption)
    .option('--mgmt-subnet <cidr>', 'management network of the lab hosts (host H = network + H; default 198.18.0.0/24)')
    .option(
      '--manager <hosts=manager>',
      'emulated network manager, e.g. 40=ifupdown or 40-47=networkmanager (repeatable; default: 16 networkmanager, others netplan)',
      collect,
      [],
    )
    .option(
      '--interfaces <hosts=names>',
      "NIC interface names, e.g. 40=eth0,eth1 (repeatable; default: the inventory's, else ib0,ib1)",
      collect,
      [],
    )
    .option(
      '--nics <count|hosts=count>',
      "fabric NICs per host, 1..16: --nics 8 for every host, --nics 16-17=8 for some (repeatable; default: the inventory's, else 2); more than 2 get a GPU node's PCI-slot names (ibp12s0, ibp75s0, …) and a ConnectX-7 each",
      collect,
      [],
    )
    .option(
      '--no-managers',
      'run no network manager in the hosts (the lab adds the fabric addresses itself; no reboot): for labs too big for a daemon per host',
    )
    .option(
      '--without-rdma <hosts>',
      'hosts that show no RDMA device (no /sys/class/infiniband entry, no rping), as a machine without driver or rdma-core',
    )
    .option(
      '--without-systemd <hosts>',
      'hosts that run no systemd (a container, a chroot-like host): no timers, PID 1 is not systemd, systemctl answers offline',
    )
    .option(
      '--without-python3 <hosts>',
      "hosts without python3 (not netplan hosts: netplan is written in it): verify's prober falls back to fping, else ping",
    )
    .option(
      '--with-fping <hosts>',
      "hosts that have fping (this machine's, from scripts/setup); the others lack it, as most machines do",
    )
    .option(
      '--fresh <hosts>',
      'hosts as a new machine arrives: fabric NICs present, no address and nothing configuring them (what deploy and onboard provision from)',
    )
    .option(
      '--suite <suite|hosts=suite>',
      "run hosts on a Debian release's whole root (bullseye, bookworm, trixie): --suite trixie for every host, --suite 16=bullseye for some (repeatable; default: this machine's own /usr); built with mmdebstrap on first use and cached in /var/cache/ibfleet-lab/roots",
      collect,
      [],
    )
    .option(
      '--link-layer <layer|hosts=layer>',
      "the RDMA ports' link layer: infiniband (the default) or ethernet (RoCE: no subnet manager, a GID table following the NICs' addresses); --link-layer 34=ethernet for some hosts (repeatable)",
      collect,
      [],
    )
    .action(async (raw: unknown, cmd: Command) => {
      const opts = await readOptions(upOptions, raw);
      const { runLabUp } = await import('./lab-up-run.js');
      done({ verdict: await runLabUp(io, cmd, opts) });
    });
}

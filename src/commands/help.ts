/**
 * What `--help` says besides the options: examples and exit codes for each command, and one way
 * of showing defaults. Plain strings, loaded for every `--help`: nothing heavy here.
 */
import type { Command, Help, Option } from 'commander';

const EXIT_CODES = `Exit codes:
  0    every selected host succeeded / complies
  1    a host failed, drifted or was unreachable, or a matrix cell failed
  2    usage or inventory error (nothing was contacted)
  130  interrupted (Ctrl-C)`;

const EXAMPLES: Readonly<Record<string, readonly string[]>> = {
  hosts: ['ibfleet hosts', 'ibfleet hosts --hosts @cpu', 'ibfleet --json hosts --hosts pair:alice'],
  render: [
    'ibfleet render --hosts 34',
    'ibfleet render --hosts all --out /tmp/ibfleet-files',
    'ibfleet render --hosts 16 --diff        # what differs from the host (read-only SSH)',
  ],
  deploy: [
    'ibfleet deploy --hosts 16,34 --dry-run        # the plan by kind, hosts alike folded',
    'ibfleet deploy --hosts 16,34 --dry-run --show-scripts',
    'ibfleet deploy --hosts pair:alice',
    'ibfleet -K deploy --hosts all                 # ask once for the sudo password',
  ],
  status: [
    'ibfleet status',
    'ibfleet status --hosts 40-57 --diff         # each drifted file as a diff',
    'ibfleet --json status | jq .summary',
  ],
  rollback: ['ibfleet rollback --hosts 34', 'ibfleet rollback --hosts all'],
  verify: [
    'ibfleet verify --pair alice',
    'ibfleet verify --hosts all --ring',
    'ibfleet verify --hosts 16,34 --no-rping',
  ],
  env: [
    'ibfleet env --hosts all --for nccl            # one block when every host agrees',
    'ibfleet env --hosts pair:alice > job-env.sh   # then in the job: . ./job-env.sh',
    'ibfleet env --hosts 40-47 --format json | jq .blocks',
  ],
  onboard: [
    'ibfleet onboard --cpu 16 --mem 34 --owner alice --cpu-address 10.208.130.16 --mem-address 10.208.130.34',
    'ibfleet onboard --cpu 50 --mem 51 --owner bob --cpu-address 10.0.0.50 --mem-address 10.0.0.51 --cpu-name gpu50',
  ],
  offboard: [
    'ibfleet offboard --pair bob --dry-run        # what would be rolled back and removed',
    'ibfleet offboard --pair bob',
    'ibfleet offboard --hosts 60 --no-rollback    # out of the inventory, routing left on the host',
  ],
  exec: [
    'ibfleet exec --hosts @cpu -- uname -r',
    'ibfleet exec --hosts all -- sh -c "ip -br addr | grep ib"',
    'ibfleet --json exec --hosts 16,34 -- ip rule',
  ],
  'export ansible': [
    'ibfleet export ansible --hosts all --out /srv/awx/ibfleet      # then: ansible-playbook -i /srv/awx/ibfleet/inventory.yml /srv/awx/ibfleet/site.yml',
    'ibfleet export ansible --hosts @cpu --out ./ansible --playbook playbooks/dual-ib-routing.yaml',
  ],
  'lab up': ['ibfleet lab up', 'ibfleet lab up --name big --hosts 16,34,40-57 --mgmt-subnet 198.18.5.0/24'],
  'lab down': ['ibfleet lab down --name big'],
  'lab reboot': ['ibfleet lab reboot 34', 'ibfleet lab reboot 16,34 --name big'],
  'lab gid': [
    'ibfleet lab up --link-layer ethernet',
    'ibfleet lab gid 34 ib1 reorder',
    'ibfleet lab port 34 ib1 down; ibfleet lab port 34 ib1 active   # re-registered',
  ],
  'lab sm': [
    'ibfleet lab sm 34 ib1 2',
    'ibfleet lab sm 34 ib1 2 --subnet-prefix fec0:0000:0000:0001',
    'ibfleet lab port 34 ib1 active   # back',
  ],
};

/** Commands that contact hosts keep a run log; their help says where. */
const LOGGED = new Set(['deploy', 'status', 'rollback', 'verify', 'onboard', 'offboard', 'exec']);

function fullName(command: Command): string {
  const names: string[] = [];
  for (let c: Command | null = command; c && c.parent; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}

/** Examples, the run log and the exit codes after each command's own help. */
export function addHelpFooters(program: Command): void {
  const visit = (command: Command) => {
    const name = fullName(command);
    const examples = EXAMPLES[name];
    if (examples) {
      const log = LOGGED.has(name)
        ? '\nRun log: every run that contacts hosts is logged (plan, script output, checks, timings) under\n$XDG_STATE_HOME/ibfleet/runs/ (default ~/.local/state/ibfleet/runs/); --log FILE writes it elsewhere.\n'
        : '';
      command.addHelpText('after', `\nExamples:\n${examples.map((e) => `  ${e}`).join('\n')}\n${log}\n${EXIT_CODES}`);
    }
    command.commands.forEach(visit);
  };
  program.commands.forEach(visit);
  program.addHelpText('after', `\nRun 'ibfleet COMMAND --help' for a command's options and examples.\n\n${EXIT_CODES}`);
}

/**
 * One way to show a default: `(default: 32)`, no quotes, nothing for an empty list or `false`.
 * Commander would print `(default: "32")`, `(default: [])` or `(default: default)` depending on how
 * an option was declared.
 */
export function optionDescription(option: Option, helper: Help, base: (option: Option) => string): string {
  const saved = { value: option.defaultValue, description: option.defaultValueDescription };
  const value = option.defaultValue as unknown;
  const shown =
    option.defaultValueDescription ??
    (Array.isArray(value)
      ? value.length
        ? value.join(',')
        : undefined
      : value === undefined || value === false
        ? undefined
        : String(value));
  option.defaultValue = undefined;
  option.defaultValueDescription = undefined;
  try {
    const text = base.call(helper, option);
    return shown === undefined || /\(default: /.test(text) ? text : `${text} (default: ${shown})`;
  } finally {
    option.defaultValue = saved.value;
    option.defaultValueDescription = saved.description;
  }
}

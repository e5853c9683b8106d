/**
 * The real ansible-playbook on a project `ibfleet export ansible` wrote: its exit code, its output
 * and the PLAY RECAP as numbers per host. ssh masters on a private control path end 5 s after the
 * last task, so nothing is left running after a test.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';

export interface AnsibleRun {
  readonly code: number;
  readonly out: string;
  /** host → { ok, changed, unreachable, failed, skipped, rescued, ignored } */
  readonly recap: Record<string, Record<string, number>>;
}

/** ansible-playbook on `project` run in `cwd` (where a controller-side command would run), control sockets under `controlDir`. */
export function ansiblePlaybook(
  project: string,
  { cwd, controlDir }: { cwd: string; controlDir: string },
  ...args: string[]
): Promise<AnsibleRun> {
  return new Promise((resolve) => {
    const env = {
      ...process.env,
      ANSIBLE_NOCOLOR: '1',
      ANSIBLE_SSH_ARGS: `-C -o ControlMaster=auto -o ControlPersist=5s -o ControlPath=${controlDir}/cp-%C`,
    };
    const child = spawn(
      'ansible-playbook',
      ['-i', join(project, 'inventory.yml'), join(project, 'site.yml'), ...args],
      { env, cwd },
    );
    let out = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString()));
    child.stderr.on('data', (b: Buffer) => (out += b.toString()));
    child.on('close', (code) => {
      const recap = Object.fromEntries(
        [...out.matchAll(/^(\S+)\s+: ((?:\w+=\d+\s*)+)$/gm)].map((m) => [
          m[1]!,
          Object.fromEntries(
            m[2]!
              .trim()
              .split(/\s+/)
              .map((kv) => [kv.split('=')[0]!, Number(kv.split('=')[1])]),
          ),
        ]),
      );
      resolve({ code: code ?? 1, out, recap });
    });
  });
}

/** Each host's `changed` count of a run's recap. */
export function changedOf(recap: AnsibleRun['recap']): Record<string, number | undefined> {
  return Object.fromEntries(Object.entries(recap).map(([host, counts]) => [host, counts.changed]));
}

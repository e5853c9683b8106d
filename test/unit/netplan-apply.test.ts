/**
 * How a netplan host's NICs are configured again without a changed configuration: `networkctl
 * reconfigure` where systemd has it (244+), `netplan apply` where it does not (Ubuntu 18.04's 237,
 * whose networkctl knows no reconfigure). Run by sh against stand-ins that answer as each does.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { renderNetplanApply } from '../../src/script/netplan.js';

const dir = mkdtempSync(join(tmpdir(), 'ibfleet-netplan-apply-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** networkctl's --help as systemd `version` prints it (its operations), and a netplan that says it ran. */
function runWith(help: string): string {
  writeFileSync(
    join(dir, 'networkctl'),
    `#!/bin/sh\nif [ "$1" = --help ]; then printf '%s\\n' ${JSON.stringify(help)}; exit 0; fi\necho "networkctl $*"\n`,
    { mode: 0o755 },
  );
  writeFileSync(join(dir, 'netplan'), '#!/bin/sh\necho "netplan $*"\n', { mode: 0o755 });
  const script = `status=0\n${renderNetplanApply(false, ['ib0', 'ib1']).join('\n')}\necho "status $status"\n`;
  return execFileSync('sh', ['-c', script], { encoding: 'utf8', env: { PATH: `${dir}:/usr/bin:/bin` } }).trim();
}

describe('configuring the NICs again on netplan hosts', () => {
  it('systemd 244+ (networkctl lists reconfigure): networkctl reconfigure of the fabric NICs', () => {
    expect(
      runWith(
        '  reconfigure DEVICES... Reconfigure interfaces\n  reload                 Reload .network and .netdev files',
      ),
    ).toBe('networkctl reconfigure ib0 ib1\nstatus 0');
  });

  it('systemd 237 (Ubuntu 18.04: no reconfigure, no reload): netplan apply', () => {
    expect(
      runWith(
        '  list [PATTERN...]      List links\n  status [PATTERN...]    Show link status\n  lldp [PATTERN...]      Show LLDP neighbors',
      ),
    ).toBe('netplan apply\nstatus 0');
  });
});

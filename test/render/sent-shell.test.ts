/**
 * The shell the scripts ibfleet sends share, host/sent/*.sh: each file clean under shellcheck (the
 * one helper), the paths, marks and exit statuses it writes literally equal to the ones the
 * TypeScript reads them by, and what travels without the files' comments. The scripts themselves
 * run in test/root/render/ (lock, restore-run, keep-links) and in the e2e stories.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CONTENT_PREFIX, SECTION_MARK } from '../../src/facts/probe-format.js';
import { LOCK_HELD_VAR, LOCK_TAKEN_MARK, LOCK_WAIT_MARK, LOCKED_EXIT } from '../../src/render/host-lock.js';
import { SELF_RESTORED_LINE, SELF_RESTORING_LINE } from '../../src/render/apply-script.js';
import { CELL_END_MARK, CELL_MARK, READY_MARK } from '../../src/render/verify-scripts.js';
import { FINISHED_PATH, LOCK_DIR, LOCK_PATH, PREVIOUS_DIR, REPLACED_DIR } from '../../src/script/paths.js';
import { SENT_SHELL_DIR, sentShell, type SentShell } from '../../src/script/sent-shell.js';
import { expectShellcheckClean } from '../helpers/tools.js';

const FILES = readdirSync(SENT_SHELL_DIR).filter((f) => f.endsWith('.sh'));
const source = (name: SentShell) => readFileSync(join(SENT_SHELL_DIR, `${name}.sh`), 'utf8');

describe('host/sent: the shell every sent script shares', () => {
  it('holds the files the renderers name', () => {
    expect(FILES.sort()).toEqual([
      'capabilities.sh',
      'change.sh',
      'give-back.sh',
      'host-lock.sh',
      'probe-host.sh',
      'probe-managers.sh',
      'probe.sh',
      'put-back.sh',
      'rping-server.sh',
      'self-restore.sh',
      'settle.sh',
      'verify.sh',
    ]);
  });

  it.each(FILES)('%s is clean under shellcheck', (file) => expectShellcheckClean(join(SENT_SHELL_DIR, file)));

  it.each(FILES)('%s: no line of a here-document starts with # (what travels drops such lines)', (file) => {
    const bodies = [...readFileSync(join(SENT_SHELL_DIR, file), 'utf8').matchAll(/<<'?(\w+)'?\n([^]*?)\n\1\n/g)];
    expect(bodies.flatMap((b) => b[2]!.split('\n')).filter((l) => /^\s*#/.test(l))).toEqual([]);
  });

  it('what travels is the file without its comments and blank lines, shellcheck directives kept', () => {
    const sent = sentShell('change');
    expect(sent).not.toMatch(/^\s*#(?! shellcheck disable=)/m);
    expect(sent).not.toContain('\n\n');
    expect(sent).toContain('# shellcheck disable=SC2034');
    expect(sent.endsWith('}\n')).toBe(true);
    expect(
      source('change')
        .split('\n')
        .filter((l) => l !== '' && !l.startsWith('#'))
        .join('\n'),
    ).toBe(
      sent
        .split('\n')
        .filter((l) => l !== '' && !l.startsWith('#'))
        .join('\n'),
    );
  });

  it("the words the files write literally are the TypeScript's", () => {
    expect(source('change')).toContain(`\nPREVIOUS=${PREVIOUS_DIR}\n`);
    expect(source('change')).toContain(`\nREPLACED=${REPLACED_DIR}\n`);
    const lock = source('host-lock');
    for (const word of [LOCK_DIR, LOCK_PATH, LOCK_HELD_VAR, `echo '${LOCK_WAIT_MARK}'`, `echo '${LOCK_TAKEN_MARK}'`])
      expect(lock).toContain(word);
    expect(lock).toContain(`exit ${LOCKED_EXIT}\n`);
    expect(lock.match(/\/run\/[a-z/.]+/g)!.every((p) => p === LOCK_DIR || p === LOCK_PATH)).toBe(true);
    const probe = source('probe') + source('probe-host') + source('probe-managers');
    expect(probe).toContain(`s() { printf '${SECTION_MARK} %s\\n' "$*"; }`);
    // A file's lines: awk's, and the shell's where awk fails (host/sent/probe.sh rd_flush).
    expect(probe.match(/printf '[^%']*%s\\n' "\$l"/g)).toEqual([`printf '${CONTENT_PREFIX}%s\\n' "$l"`]);
    expect(probe).toContain(`print "${CONTENT_PREFIX}" l`);
    expect(probe).toContain(`rd_mark() { rd_later L0 "${SECTION_MARK} $*" -; }`);
    expect(probe).toContain(`rd_later L0 "${SECTION_MARK} $1" "$2"`);
    expect(probe).toContain('s runtime; for d in /run/NetworkManager ');
    expect(source('verify')).toContain(`printf '${CELL_MARK} %s %s\\n'`);
    expect(source('verify')).toContain(`echo ${CELL_END_MARK}; done`);
    expect(source('rping-server')).toContain(`\techo ${READY_MARK}\n`);
    expect(source('self-restore')).toContain(`\techo '${SELF_RESTORING_LINE}'\n`);
    expect(source('self-restore')).toContain(`then echo '${SELF_RESTORED_LINE}'; else`);
    const settle = source('settle');
    expect(settle).toContain(`read -r finished <${FINISHED_PATH}`);
    expect(settle).toContain(`exec 9<${LOCK_PATH}`);
    expect(settle).toContain(`exit ${LOCKED_EXIT};`);
  });
});

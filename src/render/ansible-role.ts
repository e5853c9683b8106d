/**
 * The role `ibfleet export ansible` writes (collection ibfleet.routing, role `routing`): the same for
 * every host and every export, since everything host-specific is data — host_vars and the files
 * under files/<host>/. It copies ibfleet's files and runs ibfleet's routing script; each task says
 * what ibfleet deploy does at that point. Check mode changes nothing: only the read-only runs of the
 * script (--preflight, --check) happen, and `copy` shows the files it would write. Pure text.
 */
import { LOCK_DIR, LOCK_PATH, ROUTES_DATA_PATH, ROUTING_SCRIPT_PATH } from '../script/paths.js';
import { VERSION } from '../version.js';
import { LOCKED_EXIT } from './host-lock.js';

/**
 * The host lock deploy takes (host-lock.ts), taken for the role's run: a deploy or rollback under
 * way is waited for, and one that comes while the role runs waits for it. Each task is a process of
 * its own, so the lock goes with its file descriptor to a holder deaf to the session's hangup — a
 * sleep the role's last task stops, or that ends by itself after \$2 seconds should the controller vanish
 * mid-run. The lock file names it as deploy's own runs are named, so a deploy that finds it held
 * says "another ibfleet ansible". No Jinja: the role passes only the two numbers.
 */
const TAKE_LOCK = `set -u
[ -d ${LOCK_DIR} ] || mkdir -m 0700 ${LOCK_DIR} 2>/dev/null
if [ -L ${LOCK_DIR} ] || [ ! -d ${LOCK_DIR} ] || [ ! -O ${LOCK_DIR} ]; then
  echo "ibfleet: ${LOCK_DIR} is not a directory of root's; refusing to use the lock in it" >&2
  exit 70
fi
exec 9>>${LOCK_PATH} || exit 70
if ! flock -w "$1" 9; then
  holder=
  IFS=' ' read -r tag what pid _ <${LOCK_PATH} 2>/dev/null || true
  [ "\${tag:-}" = ibfleet ] && [ -n "\${pid:-}" ] && [ -d "/proc/\${pid}" ] && holder="another ibfleet \${what} (its shell is pid \${pid})"
  echo "ibfleet: the host lock ${LOCK_PATH} is held by \${holder:-a process that is not an ibfleet run}; waited $1 s for it; nothing was changed" >&2
  exit ${LOCKED_EXIT}
fi
(trap '' HUP && exec sleep "$2") </dev/null >/dev/null 2>&1 &
printf 'ibfleet ansible %s ansible-%s\\n' "$!" "$!" >${LOCK_PATH}
echo "$!"
`;

/** The holder stopped: only the sleep this run started (a pid reused since is left alone). */
const RELEASE_LOCK = `p=$1
[ -n "$p" ] && read -r comm </proc/"$p"/comm 2>/dev/null && [ "$comm" = sleep ] && kill "$p"
exit 0
`;

const indent = (text: string, by: string) =>
  text
    .trimEnd()
    .split('\n')
    .map((l) => `${by}${l}`)
    .join('\n');

/**
 * The routing program and the host's data, read on the controller: before the files are installed
 * (not yet there on a first run) the program runs with `sh -c`, its data on its standard input.
 */
const lookup = (path: string) => `lookup('ansible.builtin.file', ibfleet_files_dir ~ '${path}', rstrip=False)`;
const PROGRAM = lookup(ROUTING_SCRIPT_PATH);
const DATA_ON_STDIN = `stdin: "{{ ${lookup(ROUTES_DATA_PATH)} }}"
        stdin_add_newline: false
      environment:
        IBFLEET_ROUTES_CONF: /dev/stdin`;

export const ROLE_TASKS = `---
# Role ibfleet.routing.routing, written by ibfleet ${VERSION} export ansible: what \`ibfleet deploy\`
# does, with ibfleet's own files and routing script. No routing is decided here.

# Deploy's host lock, for the whole run: nothing of ibfleet's changes the host meanwhile.
- name: Take the host lock ibfleet deploy takes (a deploy or rollback under way is waited for)
  ansible.builtin.command:
    argv:
      - sh
      - -c
      - |
${indent(TAKE_LOCK, '        ')}
      - ibfleet-lock
      - "{{ ibfleet_lock_wait }}"
      - "{{ ibfleet_lock_hold }}"
  when: not ansible_check_mode
  changed_when: false
  register: ibfleet_lock

- name: What deploy does, under the host lock
  block:
    - name: The host can take the routing (each fabric NIC there, up, with its address)
      ansible.builtin.command:
        argv: [sh, -c, "{{ ${PROGRAM} }}", ibfleet-routes, --preflight]
        ${DATA_ON_STDIN}
      check_mode: false
      changed_when: false
      failed_when: ibfleet_preflight.rc not in [0, 1]
      register: ibfleet_preflight

    - name: Refuse a host that cannot take it, with ibfleet's reasons (nothing is changed on it)
      ansible.builtin.fail:
        msg: "{{ ibfleet_preflight.stdout_lines | join('; ') }}"
      when: ibfleet_preflight.rc != 0

    # Before anything changes: what the change may touch, as it is now — a script that puts it back.
    - name: What this run may change, as it is now (the routing script's --snapshot; it changes nothing)
      ansible.builtin.command:
        argv: "{{ ['sh', '-c', ${PROGRAM}, 'ibfleet-routes', '--snapshot'] + (ibfleet_files | map(attribute='path') | list) + ibfleet_absent + (ibfleet_directories | reverse | map('regex_replace', '$', '/') | list) }}"
        ${DATA_ON_STDIN}
      when: not ansible_check_mode
      changed_when: false
      register: ibfleet_snapshot

    - name: The change and its verification; a host that fails is put back as it was, as ibfleet deploy does
      block:
        - name: Directories of ibfleet's files
          ansible.builtin.file:
            path: "{{ item }}"
            state: directory
          loop: "{{ ibfleet_directories }}"

        - name: ibfleet's files for this host, exactly as ibfleet rendered them
          ansible.builtin.copy:
            src: "{{ ibfleet_files_dir }}{{ item.path }}"
            dest: "{{ item.path }}"
            mode: "{{ item.mode }}"
            owner: root
            group: root
          loop: "{{ ibfleet_files }}"
          loop_control:
            label: "{{ item.path }}"
          register: ibfleet_copied

        - name: ibfleet's files this host must not have (another manager's hook, units the playbook dropped)
          ansible.builtin.file:
            path: "{{ item }}"
            state: absent
          loop: "{{ ibfleet_absent }}"
          register: ibfleet_removed

        - name: What differs from the deployed state (the routing script's --check; it changes nothing)
          ansible.builtin.command:
            argv: [sh, -c, "{{ ${PROGRAM} }}", ibfleet-routes, --check]
            ${DATA_ON_STDIN.replace(/\n {6}/g, '\n          ')}
          check_mode: false
          changed_when: ansible_check_mode and ibfleet_check.rc == 1
          failed_when: ibfleet_check.rc not in [0, 1]
          register: ibfleet_check

        - name: Differences found
          ansible.builtin.debug:
            msg: "{{ ibfleet_check.stdout_lines }}"
          when: ibfleet_check.rc != 0

        # The routing script says "IFACE: configured" for each NIC it changed, and how it raised a neighbour
        # table limit; a run that found only what it cannot change (traffic leaving through another NIC)
        # changed nothing, and the verification below fails the host.
        - name: Apply (ibfleet's routing script, as ibfleet deploy runs it)
          ansible.builtin.command:
            argv: ["${ROUTING_SCRIPT_PATH}"]
          when: ibfleet_check.rc != 0 or ibfleet_copied.changed or ibfleet_removed.changed
          changed_when: "ibfleet_applied.stdout is search(': configured$|^ibfleet-routes: neighbour table: ', multiline=True)"
          register: ibfleet_applied

        # What follows from the files above (their tasks report the change): systemd reloads changed
        # units and runs the repair timer.
        - name: Tell systemd about changed units (where systemd runs)
          ansible.builtin.command:
            argv: [sh, -c, "{{ ibfleet_after_files_changed if (ibfleet_copied.changed or ibfleet_removed.changed) else ibfleet_after_files_unchanged }}"]
          when: not ansible_check_mode and (ibfleet_after_files_changed | length > 0)
          changed_when: false

        - name: Verify as ibfleet deploy verifies (the routing script's --check)
          ansible.builtin.command:
            argv: ["${ROUTING_SCRIPT_PATH}", --check]
          when: not ansible_check_mode
          changed_when: false
          failed_when: false
          register: ibfleet_verify

        - name: Fail a host that is not as deployed, with ibfleet's reasons
          ansible.builtin.fail:
            msg: "verification failed: {{ ibfleet_verify.stdout_lines | join('; ') }}"
          when: not ansible_check_mode and ibfleet_verify.rc != 0

      rescue:
        - name: Put the host back as it was before this run (the snapshot)
          ansible.builtin.command:
            argv: [sh, -s]
            stdin: "{{ ibfleet_snapshot.stdout }}"
          when: not ansible_check_mode and ibfleet_snapshot.stdout is defined

        - name: Fail the host with ibfleet's reasons
          ansible.builtin.fail:
            msg: "{{ ansible_failed_result.msg }}{{ '' if ansible_check_mode else '; rolled back: the host is as it was before this run' }}"

  always:
    - name: Give the host lock back
      ansible.builtin.command:
        argv:
          - sh
          - -c
          - |
${indent(RELEASE_LOCK, '            ')}
          - ibfleet-unlock
          - "{{ ibfleet_lock.stdout | default('') }}"
      when: not ansible_check_mode and ibfleet_lock.stdout is defined
      changed_when: false
`;

export const ROLE_DEFAULTS = `---
# ibfleet's files for the host, as \`ibfleet export ansible\` wrote them next to the playbook.
ibfleet_files_dir: "{{ playbook_dir }}/files/{{ inventory_hostname }}"
ibfleet_directories: []
ibfleet_files: []
ibfleet_absent: []
ibfleet_after_files_changed: ""
ibfleet_after_files_unchanged: ""
# Deploy's host lock: how long to wait for a deploy or rollback that holds it, and the longest the
# role keeps it should the controller vanish mid-run (its last task gives it back).
ibfleet_lock_wait: 300
ibfleet_lock_hold: 1800
`;

export const ROLE_META = `---
galaxy_info:
  author: ibfleet
  description: Installs ibfleet's rendered per-NIC policy routing files and runs ibfleet's routing script
  license: MIT
  min_ansible_version: "2.14"
  platforms:
    - name: Debian
      versions: [all]
    - name: Ubuntu
      versions: [all]
dependencies: []
`;

/**
 * What the routing script's `--check` knows of ibfleet's other files on the host: each one's path,
 * mode and checksum as rendered, so the host alone can tell a file missing, edited or re-moded —
 * in the words status uses (plan/assess.ts fileFinding). The routing script is the same whichever
 * network manager runs it, so files that only some managers get (each manager's hooks, at their own
 * paths; netplan's are two) are checked as one of several sets: the set installed must be whole and
 * intact, and one set must be there. The
 * routing script cannot hold its own checksum; it is the program running. Pure.
 */
import { MANAGERS, type Manager } from '../inventory/model.js';
import { sha256 } from '../script/digest.js';
import type { RenderedFile } from '../script/rendered-file.js';
import { shellQuote } from '../script/shell.js';

interface Expected {
  readonly path: string;
  readonly mode: string;
  readonly sha256: string;
  readonly label: string;
  /** Checked only where this shell condition holds (RenderedFile.checkWhere). */
  readonly where?: string | undefined;
  /** In a one-of check: the set it belongs to (the manager whose hook it is); a set is installed whole. */
  readonly set: string;
}

/** A file every manager gets alike, or a file of which each manager gets its own (`noun`: what they are). */
export type FileCheck =
  | { readonly kind: 'file'; readonly file: Expected }
  | { readonly kind: 'one-of'; readonly noun: string; readonly files: readonly Expected[] };

function expected(file: RenderedFile): Expected {
  return {
    path: file.path,
    mode: file.mode.toString(8),
    sha256: sha256(file.content),
    label: file.label ?? file.path,
    where: file.checkWhere,
    set: file.manager ?? file.path,
  };
}

/**
 * From the files each manager would get: a path rendered the same for every manager is one file;
 * the others are grouped by what they are (their role), each group checked as one of its files.
 */
export function fileChecksOf(byManager: ReadonlyMap<Manager, readonly RenderedFile[]>): FileCheck[] {
  const all = MANAGERS.flatMap((m) => byManager.get(m) ?? []);
  const same = (path: string) => {
    const versions = MANAGERS.map((m) => byManager.get(m)?.find((f) => f.path === path));
    return versions.every((v) => v !== undefined && v.content === versions[0]!.content && v.mode === versions[0]!.mode);
  };
  const checks: FileCheck[] = [];
  const roles = new Map<string, Expected[]>();
  for (const file of all) {
    if (same(file.path)) {
      if (!checks.some((c) => c.kind === 'file' && c.file.path === file.path))
        checks.push({ kind: 'file', file: expected(file) });
      continue;
    }
    const key = file.checkGroup ?? file.role;
    const group = roles.get(key) ?? [];
    if (group.length === 0) {
      roles.set(key, group);
      checks.push({ kind: 'one-of', noun: key, files: group });
    }
    if (!group.some((e) => e.path === file.path && e.sha256 === sha256(file.content))) group.push(expected(file));
  }
  return checks;
}

const CHECK_FILE = `# check_file PATH MODE SHA256 LABEL — under --check: one of ibfleet's files, as it was rendered.
check_file() {
	if [ ! -f "$1" ]; then
		drift "$4 is missing"
		return 0
	fi
	sum=$(sha256sum <"$1" 2>/dev/null)
	if [ "\${sum%% *}" != "$3" ]; then
		drift "$4 was modified (content differs from the rendered file)"
		return 0
	fi
	owner=$(stat -c '%a %u' -- "$1" 2>/dev/null)
	[ "$owner" = "$2 0" ] || drift "$4 has mode \${owner% *} owner uid \${owner#* }, want $2 root"
	return 0
}

`;

const CHECK_ONE_OF = `# check_one_of NOUN PLACES [COUNT [PATH MODE SHA256 LABEL]...]... — the files each network manager
# gets at its own places (its hooks), as sets of COUNT files: the set installed must be there whole and
# as rendered, and exactly one set must be there.
check_one_of() {
	noun=$1 places=$2
	shift 2
	n=0 seen=
	while [ "$#" -ge 5 ]; do
		k=$1
		shift
		if any_file "$k" "$@"; then
			n=$((n + 1))
			while [ "$k" -gt 0 ]; do
				[ ! -f "$1" ] || seen="\${seen:+$seen, }$1"
				check_file "$1" "$2" "$3" "$4"
				shift 4
				k=$((k - 1))
			done
		else
			shift $((k * 4))
		fi
	done
	[ "$n" -gt 0 ] || drift "$noun is missing (ibfleet installs it for the host's network manager: $places)"
	[ "$n" -le 1 ] || drift "the $noun files of $n network managers are installed ($seen): the host's network manager needs its own (ibfleet deploy removes the others)"
	return 0
}

# any_file COUNT [PATH MODE SHA256 LABEL]... — is any of the COUNT files there?
# (Its own counter: sh functions share their caller's variables.)
any_file() {
	left=$1
	shift
	while [ "$left" -gt 0 ]; do
		[ ! -f "$1" ] || return 0
		shift 4
		left=$((left - 1))
	done
	return 1
}

`;

/** The shell functions the checks call (none when there is nothing to check: shellcheck flags a function never called). */
export function fileCheckFunctions(checks: readonly FileCheck[]): string {
  return `${checks.length ? CHECK_FILE : ''}${checks.some((c) => c.kind === 'one-of') ? CHECK_ONE_OF : ''}`;
}

const words = (e: Expected) => [e.path, e.mode, e.sha256, e.label].map(shellQuote).join(' ');

/** One line per check, run under --check once the NICs are looked at. */
export function renderFileChecks(checks: readonly FileCheck[]): string[] {
  if (checks.length === 0) return [];
  return [
    "# ibfleet's other files, as rendered (path, mode, SHA-256).",
    ...checks.map((c) => {
      if (c.kind === 'file') return `${c.file.where ? `! ${c.file.where} || ` : ''}check_file ${words(c.file)}`;
      const places = c.files.map((f) => f.path).join(', ');
      // Each set's files together, behind their count (fileChecksOf adds them manager by manager).
      const sets = [...new Set(c.files.map((f) => f.set))].map((set) => c.files.filter((f) => f.set === set));
      return `check_one_of ${shellQuote(c.noun)} ${shellQuote(places)} \\\n\t${sets.map((files) => `${files.length} ${files.map(words).join(' ')}`).join(' \\\n\t')}`;
    }),
  ];
}

/** Edits to a probe transcript, as a host in another state would have printed it (probe format 3). */

/** Lines added to the `ip` batch section: rules, routes (`… table 941` for a NIC table), addresses. */
export function addIpLines(probe: string, ...lines: string[]): string {
  if (!probe.includes('@@ibfleet ip\n')) throw new Error('the transcript has no ip section');
  return probe.replace('@@ibfleet ip\n', `@@ibfleet ip\n${lines.map((l) => `${l}\n`).join('')}`);
}

/** The lines of the `ip` section matching `pattern` taken out. */
export function dropIpLines(probe: string, pattern: RegExp): string {
  return probe.replace(
    /(@@ibfleet ip\n)((?:(?!@@ibfleet ).*\n)*)/,
    (_m, head: string, body: string) =>
      head +
      body
        .split('\n')
        .filter((l) => l === '' || !pattern.test(l))
        .join('\n'),
  );
}

/** A section added before the end mark (or replacing one of the same key). */
export function withSection(probe: string, key: string, lines: readonly string[]): string {
  const section = `@@ibfleet ${key}\n${lines.map((l) => `${l}\n`).join('')}`;
  const existing = new RegExp(`@@ibfleet ${key.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}\\n(?:(?!@@ibfleet ).*\\n)*`);
  return existing.test(probe)
    ? probe.replace(existing, section)
    : probe.replace('@@ibfleet end', `${section}@@ibfleet end`);
}

/** One of ibfleet's files as the `files` section lists it (stat and sha256sum lines), replacing what it said of that path. */
export function withFile(probe: string, path: string, mode: string, sha: string): string {
  const cleaned = probe.replace(
    /(@@ibfleet files\n)((?:(?!@@ibfleet ).*\n)*)/,
    (_m, head: string, body: string) =>
      head +
      body
        .split('\n')
        .filter((l) => l === '' || !l.endsWith(` ${path}`))
        .join('\n'),
  );
  return cleaned.replace('@@ibfleet files\n', `@@ibfleet files\n${mode} 0 ${path}\n${sha}  ${path}\n`);
}

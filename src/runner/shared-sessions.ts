/**
 * One SSH connection per host for a whole multi-phase run (onboard: discovery, deploy, verify):
 * every phase "connects" and gets the session opened first, with everything it can do — a
 * conversing shell included, so deploy's probe and change still share one channel. Closing is
 * deferred to closeAll().
 */
import type { Session, Transport } from './transport.js';

export function sharedSessions(base: Transport): Transport & { closeAll(): void } {
  const sessions = new Map<number, Promise<Session>>();
  return {
    connect(host, signal) {
      let opened = sessions.get(host.id);
      const first = opened === undefined;
      if (!opened) {
        opened = base.connect(host, signal);
        sessions.set(host.id, opened);
        opened.catch(() => sessions.delete(host.id));
      }
      return opened.then((session): Session => {
        const shared: Session = {
          run: (script, options) => session.run(script, options),
          converse: (script, until, next, options) => session.converse(script, until, next, options),
          close: () => undefined,
          get channels() {
            return session.channels;
          },
          // Host-key notes ("recorded new key") belong to the run that opened the connection.
          notes: first ? session.notes : [],
        };
        return shared;
      });
    },
    closeAll() {
      for (const opened of sessions.values())
        opened.then(
          (s) => s.close(),
          () => undefined,
        );
      sessions.clear();
    },
  };
}

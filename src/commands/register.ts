/** The command table: each command file registers itself; heavy modules load only inside actions. */
import type { Command } from 'commander';
import { registerCompletion } from './completion.js';
import type { CommandResult, Io } from './context.js';
import { registerDeploy } from './deploy.js';
import { registerEnv } from './env.js';
import { registerExec } from './exec.js';
import { registerExport } from './export.js';
import { registerHosts } from './hosts.js';
import { registerLab } from './lab.js';
import { registerOffboard } from './offboard.js';
import { registerOnboard } from './onboard.js';
import { registerRender } from './render.js';
import { registerRollback } from './rollback.js';
import { registerStatus } from './status.js';
import { registerVerify } from './verify.js';

export function registerCommands(program: Command, io: Io, done: (r: CommandResult) => void): void {
  registerHosts(program, io, done);
  registerRender(program, io, done);
  registerLab(program, io, done);
  registerDeploy(program, io, done);
  registerStatus(program, io, done);
  registerRollback(program, io, done);
  registerVerify(program, io, done);
  registerEnv(program, io, done);
  registerOnboard(program, io, done);
  registerOffboard(program, io, done);
  registerExec(program, io, done);
  registerExport(program, io, done);
  registerCompletion(program, io, done);
}

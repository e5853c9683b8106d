/**
 * The deploy command a message gives as the next step, written as a user copies it: with the
 * inventory the run read (`ibfleet deploy -i lab.yaml --hosts 60-62`), so that it acts on the same
 * hosts from whatever directory it is pasted in. Status's not-deployed line, verify's causes and the
 * lines that fold them all say it this way. Pure.
 */
import { shellQuote } from '../script/shell.js';

export function deployCommand(hostSet: string, inventory: string | undefined): string {
  return `ibfleet deploy${inventory === undefined ? '' : ` -i ${shellQuote(inventory)}`} --hosts ${hostSet}`;
}

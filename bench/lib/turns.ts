// A turn: requests sent one at a time, measured as the client's median milliseconds and the
// stack's CPU per request, by process (startCpuMeter). The home and realm suites compare turns
// of one kind of request with turns of another.
import { startCpuMeter } from './procs';
import { median } from './report';

export interface TurnFigure {
  /** Median client-side ms per request. */
  ms: number;
  /** CPU ms of the measured processes (and the PostgreSQL backends given) per request. */
  cpuMs: number;
  /** The same by process. */
  byProcess: Record<string, number>;
  /** The last answer's size. */
  bytes: number;
}

/** `count` requests made by `send`, one at a time, with the CPU of `pids` and `postgresBackends`. */
export async function measureTurn(
  count: number,
  pids: Record<string, number>,
  postgresBackends: number[],
  send: () => Promise<{ ms: number; bytes: number }>,
): Promise<TurnFigure> {
  const spent = startCpuMeter(pids, postgresBackends);
  const times: number[] = [];
  let bytes = 0;
  for (let i = 0; i < count; i++) {
    const answer = await send();
    times.push(answer.ms);
    bytes = answer.bytes;
  }
  const byProcess = Object.fromEntries(Object.entries(spent()).map(([name, ms]) => [name, ms / count]));
  const cpuMs = Object.values(byProcess).reduce((sum, ms) => sum + ms, 0);
  return { ms: median(times), cpuMs, byProcess, bytes };
}

/** Each turn as "<ms> ms / <ms> ms CPU (<process> <ms>, ...)", for the log. */
export function describeTurns(turns: TurnFigure[]): string {
  return turns
    .map(
      (turn) =>
        `${turn.ms.toFixed(0)} ms / ${turn.cpuMs.toFixed(0)} ms CPU (${Object.entries(turn.byProcess)
          .map(([name, ms]) => `${name} ${ms.toFixed(0)}`)
          .join(', ')})`,
    )
    .join('; ');
}

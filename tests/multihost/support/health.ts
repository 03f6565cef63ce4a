// The event tier's load balancer's health check, as an operator configures one (HAProxy `check
// inter 250 fall 2 rise 2` with `on-marked-down shutdown-sessions`): GET /health/ready on every
// replica each interval, a replica that fails `fall` checks in a row is marked down (no new
// requests; the requests under way to it are ended, so long-polls parked on a host that fell off
// the network are answered 502 and polled again elsewhere), and up again after `rise` successes.

import { setTimeout as sleep } from 'node:timers/promises';

export interface HealthTarget {
  id: string;
  host: string;
  port: number;
}

export interface HealthSettings {
  intervalMs: number;
  timeoutMs: number;
  fall: number;
  rise: number;
}

export interface HealthTransition {
  id: string;
  up: boolean;
  at: number;
}

export class HealthChecker {
  readonly transitions: HealthTransition[] = [];
  private readonly state = new Map<string, { up: boolean; streak: number }>();
  private running = false;
  private loop: Promise<void> = Promise.resolve();

  constructor(
    private readonly targets: () => HealthTarget[],
    private readonly settings: HealthSettings,
    /** Called when a target is marked down (end the requests under way to it). */
    private readonly onDown: (target: HealthTarget) => void,
  ) {}

  /** A target never checked yet counts as up (it was just started and said it listens). */
  isUp(id: string): boolean {
    return this.state.get(id)?.up ?? true;
  }

  start(): this {
    this.running = true;
    this.loop = (async () => {
      while (this.running) {
        await Promise.all(this.targets().map((target) => this.check(target)));
        await sleep(this.settings.intervalMs);
      }
    })();
    return this;
  }

  private async check(target: HealthTarget): Promise<void> {
    let ok = false;
    try {
      const response = await fetch(`http://${target.host}:${target.port}/health/ready`, {
        signal: AbortSignal.timeout(this.settings.timeoutMs),
      });
      ok = response.ok;
      await response.body?.cancel();
    } catch {
      // refused, unreachable or timed out
    }
    const state = this.state.get(target.id) ?? { up: true, streak: 0 };
    this.state.set(target.id, state);
    state.streak = ok === state.up ? 0 : state.streak + 1;
    if (state.streak < (state.up ? this.settings.fall : this.settings.rise)) return;
    state.up = ok;
    state.streak = 0;
    this.transitions.push({ id: target.id, up: ok, at: Date.now() });
    if (!ok) this.onDown(target);
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
  }
}

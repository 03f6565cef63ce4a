// A network of test "hosts" on this machine: each host is a Linux network namespace with its own
// address on a /24, joined by a veth pair to a bridge in the root namespace, loopback up. The
// root namespace is a host too (the bridge's address, .1): the test process, its clients and the
// event tier's load balancer run there. A host can be cut off (its link down: packets vanish
// without a reset, as with a pulled cable or a partition) and brought back.
//
// Every name carries this process's pid (namespaces `tcmh-<pid>-<host>`, links `tcmh<pid>…`), so
// runs side by side never meet, and leftovers of a run that died (its pid gone) are removed by
// the next one. destroy() is synchronous and also runs on process exit.

import { execFileSync } from 'node:child_process';

export interface NetworkHost {
  name: string;
  namespace: string;
  address: string;
  /** The command prefix that runs a process on this host. */
  command: string[];
  /** The root side of its veth pair (what cut() takes down). */
  link: string;
}

const PREFIX = 'tcmh';

function ip(...args: string[]): string {
  return execFileSync('ip', args, { stdio: ['ignore', 'pipe', 'pipe'] }).toString();
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export class TestNetwork {
  readonly hosts = new Map<string, NetworkHost>();
  private destroyed = false;
  private readonly onExit = () => this.destroy();

  private constructor(
    readonly bridge: string,
    /** The first three octets of the /24, e.g. "10.77.42". */
    readonly subnet: string,
  ) {}

  /** The root namespace's address on the bridge (the test process's host). */
  get rootAddress(): string {
    return `${this.subnet}.1`;
  }

  /** A bridge and one namespace per host name (addresses .10, .11, … in order). */
  static create(hostNames: string[]): TestNetwork {
    TestNetwork.removeStale();
    const pid = process.pid;
    const network = new TestNetwork(`${PREFIX}${pid}`, TestNetwork.freeSubnet());
    process.once('exit', network.onExit);
    try {
      ip('link', 'add', network.bridge, 'type', 'bridge');
      ip('addr', 'add', `${network.rootAddress}/24`, 'dev', network.bridge);
      ip('link', 'set', network.bridge, 'up');
      hostNames.forEach((name, i) => network.addHost(name, i));
    } catch (error) {
      network.destroy();
      throw new Error(`could not build the test network (network namespaces, veth, bridge): ${String(error)}`, {
        cause: error,
      });
    }
    return network;
  }

  private addHost(name: string, index: number): void {
    const pid = process.pid;
    const host: NetworkHost = {
      name,
      namespace: `${PREFIX}-${pid}-${name}`,
      address: `${this.subnet}.${10 + index}`,
      command: ['ip', 'netns', 'exec', `${PREFIX}-${pid}-${name}`],
      link: `${PREFIX}${pid}v${index}`,
    };
    const peer = `${PREFIX}${pid}p${index}`;
    ip('netns', 'add', host.namespace);
    this.hosts.set(name, host);
    ip('link', 'add', host.link, 'type', 'veth', 'peer', 'name', peer);
    ip('link', 'set', peer, 'netns', host.namespace);
    ip('link', 'set', host.link, 'master', this.bridge);
    ip('link', 'set', host.link, 'up');
    const inside = (...args: string[]) => ip('-n', host.namespace, ...args);
    inside('link', 'set', peer, 'name', 'eth0');
    inside('addr', 'add', `${host.address}/24`, 'dev', 'eth0');
    inside('link', 'set', 'eth0', 'up');
    inside('link', 'set', 'lo', 'up');
  }

  host(name: string): NetworkHost {
    const host = this.hosts.get(name);
    if (!host) throw new Error(`no host ${name}`);
    return host;
  }

  /** The host's link goes down: nothing it sends arrives, nothing reaches it, no connection is reset. */
  cut(name: string): void {
    ip('link', 'set', this.host(name).link, 'down');
  }

  restore(name: string): void {
    ip('link', 'set', this.host(name).link, 'up');
  }

  /** Removes every namespace and link of this network (processes on them must be stopped first). */
  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    process.removeListener('exit', this.onExit);
    for (const host of this.hosts.values()) {
      for (const args of [
        ['link', 'del', host.link],
        ['netns', 'del', host.namespace],
      ]) {
        try {
          ip(...args);
        } catch {
          // never created, or gone with its namespace
        }
      }
    }
    try {
      ip('link', 'del', this.bridge);
    } catch {
      // never created
    }
  }

  /** A 10.77.x.0/24 no interface of this machine has an address in. */
  private static freeSubnet(): string {
    const used = ip('-4', '-o', 'addr', 'show');
    for (let i = 0; i < 200; i++) {
      const subnet = `10.77.${20 + ((process.pid + i) % 200)}`;
      if (!used.includes(` ${subnet}.`)) return subnet;
    }
    throw new Error('no free 10.77.x.0/24 subnet');
  }

  /** Namespaces and links of earlier runs whose process is gone. */
  static removeStale(): void {
    const stale = (name: string, pattern: RegExp) => {
      const match = pattern.exec(name);
      return match !== null && Number(match[1]) !== process.pid && !alive(Number(match[1]));
    };
    for (const line of ip('netns', 'list').split('\n')) {
      const name = line.split(' ')[0];
      if (stale(name, new RegExp(`^${PREFIX}-(\\d+)-`))) ip('netns', 'del', name);
    }
    for (const line of ip('-o', 'link', 'show').split('\n')) {
      const name = /^\d+: ([^:@]+)/.exec(line)?.[1];
      if (name && stale(name, new RegExp(`^${PREFIX}(\\d+)(v\\d+)?$`))) {
        try {
          ip('link', 'del', name);
        } catch {
          // went with its peer
        }
      }
    }
  }
}

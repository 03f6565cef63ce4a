// The process helpers live in @teamchat/testing (shared with the event-tier and fault tests).
export {
  builtServices,
  freePort,
  preloadPath,
  repoRoot,
  ServiceProcess,
  stackServices,
  startServiceProcess,
  type Exit,
  type LogLine,
  type ServiceDefinition,
} from '@teamchat/testing';

import { freePort, stackServices } from '@teamchat/testing';

/**
 * A free port for each of `backends` and the gateway, and the *_URL variables that point the
 * stack's processes at each other; a service not among them points at the discard port, never at
 * a fixed port of this machine.
 */
export async function stackAddresses(
  backends: { name: string }[],
): Promise<{ ports: Map<string, number>; urlVars: Record<string, string> }> {
  const ports = new Map<string, number>();
  for (const service of [...backends, { name: 'gateway' }]) ports.set(service.name, await freePort());
  const urlVars = Object.fromEntries(
    stackServices()
      .services.filter((service) => service.urlVar)
      .map((service) => [
        service.urlVar!,
        ports.has(service.name) ? `http://127.0.0.1:${ports.get(service.name)}` : 'http://127.0.0.1:9',
      ]),
  );
  return { ports, urlVars };
}

// NetworkPolicy's rules for ingress, evaluated as a conforming network plugin does: a pod no
// policy (with an Ingress type) selects accepts every connection; a selected pod accepts one
// that some selecting policy's rule allows (a peer matching the source, a port matching the
// destination). Policies only allow, they never deny: they add up. Selectors' matchLabels and
// matchExpressions (In, NotIn, Exists, DoesNotExist) are supported; ipBlock peers, which
// Teamchat's policies do not use, are refused, so nothing is silently misread.

import type { Resource } from './kustomize';

type Labels = Record<string, string>;

interface LabelSelector {
  matchLabels?: Labels;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}

export interface Endpoint {
  namespace: string;
  /** The namespace's labels; kubernetes.io/metadata.name is always there, as the API server sets it. */
  namespaceLabels?: Labels;
  podLabels: Labels;
}

export interface Destination extends Endpoint {
  /** The pod's container ports, for policies naming a port. */
  ports: { name?: string; containerPort: number; protocol?: string }[];
}

export function selects(selector: LabelSelector | undefined, labels: Labels): boolean {
  if (!selector) return true;
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) if (labels[key] !== value) return false;
  for (const { key, operator, values = [] } of selector.matchExpressions ?? []) {
    const has = Object.prototype.hasOwnProperty.call(labels, key);
    switch (operator) {
      case 'In':
        if (!has || !values.includes(labels[key])) return false;
        break;
      case 'NotIn':
        if (has && values.includes(labels[key])) return false;
        break;
      case 'Exists':
        if (!has) return false;
        break;
      case 'DoesNotExist':
        if (has) return false;
        break;
      default:
        throw new Error(`label selector operator ${operator} is not supported`);
    }
  }
  return true;
}

const namespaceLabels = (endpoint: Endpoint): Labels => ({
  ...endpoint.namespaceLabels,
  'kubernetes.io/metadata.name': endpoint.namespace,
});

function peerMatches(peer: any, policyNamespace: string, source: Endpoint): boolean {
  if (peer.ipBlock) throw new Error('ipBlock peers are not supported by this evaluator');
  if (!peer.namespaceSelector && source.namespace !== policyNamespace) return false;
  if (peer.namespaceSelector && !selects(peer.namespaceSelector, namespaceLabels(source))) return false;
  return selects(peer.podSelector, source.podLabels);
}

function portMatches(rulePort: any, destination: Destination, port: number, protocol: string): boolean {
  if ((rulePort.protocol ?? 'TCP') !== protocol) return false;
  if (rulePort.port === undefined) return true;
  if (typeof rulePort.port === 'number')
    return rulePort.endPort ? port >= rulePort.port && port <= rulePort.endPort : port === rulePort.port;
  return destination.ports.some(
    (candidate) =>
      candidate.name === rulePort.port &&
      candidate.containerPort === port &&
      (candidate.protocol ?? 'TCP') === protocol,
  );
}

/** Whether `source` may open a connection to `destination`'s `port` under `policies`. */
export function ingressAllowed(
  policies: Resource[],
  source: Endpoint,
  destination: Destination,
  port: number,
  protocol = 'TCP',
): boolean {
  const selecting = policies.filter(
    (policy) =>
      policy.kind === 'NetworkPolicy' &&
      (policy.metadata.namespace ?? '') === destination.namespace &&
      (policy.spec.policyTypes ?? ['Ingress']).includes('Ingress') &&
      selects(policy.spec.podSelector, destination.podLabels),
  );
  if (!selecting.length) return true;
  return selecting.some((policy) =>
    (policy.spec.ingress ?? []).some(
      (rule: any) =>
        (!rule.from?.length || rule.from.some((peer: any) => peerMatches(peer, destination.namespace, source))) &&
        (!rule.ports?.length || rule.ports.some((rulePort: any) => portMatches(rulePort, destination, port, protocol))),
    ),
  );
}

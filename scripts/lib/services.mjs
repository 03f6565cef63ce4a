// Every process of the stack, its port, and the gateway variable that points at it.
export const GATEWAY_PORT = Number(process.env.PORT ?? 9991);

// Node's options as deployed (NODE_OPTIONS in k8s/base/<service>/deployment.yaml and
// docker-compose.yml): the launchers, the test processes and the benches start them the same way.
// The gateway allocates per request and parked poll: with V8's default young generation,
// scavenges cost it ~15 % of its CPU under load (bench/README.md, events).
export const GATEWAY_NODE_OPTIONS = '--max-semi-space-size=64';
// The event tier collects the garbage of a burst once it goes quiet (packages/runtime, idle-collection.ts).
const EVENTS_NODE_OPTIONS = '--expose-gc';

export const SERVICES = [
  { name: 'users', port: 9101, urlVar: 'USERS_URL' },
  { name: 'messages', port: 9102, urlVar: 'MESSAGES_URL' },
  { name: 'channels', port: 9103, urlVar: 'CHANNELS_URL' },
  { name: 'uploads', port: 9104, urlVar: 'UPLOADS_URL' },
  { name: 'events', port: 9105, urlVar: 'EVENTS_URL', nodeOptions: EVENTS_NODE_OPTIONS },
  { name: 'worker', port: 9106 },
  { name: 'web', port: 9107, urlVar: 'WEB_URL' },
];

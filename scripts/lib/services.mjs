// Every process of the stack, its port, and the gateway variable that points at it.
export const GATEWAY_PORT = Number(process.env.PORT ?? 9991);

export const SERVICES = [
  { name: 'users', port: 9101, urlVar: 'USERS_URL' },
  { name: 'messages', port: 9102, urlVar: 'MESSAGES_URL' },
  { name: 'channels', port: 9103, urlVar: 'CHANNELS_URL' },
  { name: 'uploads', port: 9104, urlVar: 'UPLOADS_URL' },
  { name: 'events', port: 9105, urlVar: 'EVENTS_URL' },
  { name: 'worker', port: 9106 },
];

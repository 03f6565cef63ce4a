// The whole HTTP surface of the event tier.
import type { Route } from '@teamchat/core';
import type { EventsDeps } from './deps';
import { deleteQueue, getEvents } from './views/events';
import { registerQueue } from './views/register';

export const routes: Route<EventsDeps>[] = [
  // Anonymous: a spectator's register (the view refuses it unless the realm admits spectators).
  { method: 'POST', path: '/api/v1/register', view: registerQueue, auth: 'anonymous' },
  { method: 'GET', path: '/api/v1/events', view: getEvents },
  { method: 'DELETE', path: '/api/v1/events', view: deleteQueue },
];

// The whole HTTP surface of the event tier.
import type { Route } from '@teamchat/core';
import type { EventsDeps } from './deps';
import { deleteQueue, getEvents } from './views/events';
import { registerQueue } from './views/register';

export const routes: Route<EventsDeps>[] = [
  { method: 'POST', path: '/api/v1/register', view: registerQueue },
  { method: 'GET', path: '/api/v1/events', view: getEvents },
  { method: 'DELETE', path: '/api/v1/events', view: deleteQueue },
];

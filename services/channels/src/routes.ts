// The whole HTTP surface of the channels service.
import type { Route } from '@teamchat/core';
import type { ChannelsDeps } from './deps';
import { createChannelFolder, listChannelFolders, updateChannelFolder } from './views/channel-folders';
import {
  addDefaultStream,
  archiveStream,
  getStream,
  getStreamEmailAddress,
  getStreamId,
  getStreamMembers,
  listStreams,
  removeDefaultStream,
  updateStream,
} from './views/streams';
import {
  getSubscriptionStatus,
  listSubscriptions,
  subscribe,
  unsubscribe,
  updateSubscriptionProperties,
  updateSubscriptions,
} from './views/subscriptions';
import { deleteTopic, getTopics, updateMutedTopic, updateUserTopic } from './views/topics';

export const routes: Route<ChannelsDeps>[] = [
  { method: 'GET', path: '/api/v1/users/me/subscriptions', view: listSubscriptions },
  { method: 'POST', path: '/api/v1/users/me/subscriptions', view: subscribe },
  { method: 'PATCH', path: '/api/v1/users/me/subscriptions', view: updateSubscriptions },
  { method: 'DELETE', path: '/api/v1/users/me/subscriptions', view: unsubscribe },
  { method: 'POST', path: '/api/v1/users/me/subscriptions/properties', view: updateSubscriptionProperties },
  // Zulip's method is POST; PATCH is accepted as well for clients that send it.
  { method: 'PATCH', path: '/api/v1/users/me/subscriptions/properties', view: updateSubscriptionProperties },
  { method: 'GET', path: '/api/v1/users/:user_id/subscriptions/:stream_id', view: getSubscriptionStatus },

  { method: 'GET', path: '/api/v1/streams', view: listStreams },
  { method: 'GET', path: '/api/v1/streams/:stream_id', view: getStream },
  { method: 'PATCH', path: '/api/v1/streams/:stream_id', view: updateStream },
  { method: 'DELETE', path: '/api/v1/streams/:stream_id', view: archiveStream },
  { method: 'GET', path: '/api/v1/streams/:stream_id/members', view: getStreamMembers },
  { method: 'GET', path: '/api/v1/streams/:stream_id/email_address', view: getStreamEmailAddress },
  { method: 'POST', path: '/api/v1/streams/:stream_id/delete_topic', view: deleteTopic },
  { method: 'GET', path: '/api/v1/get_stream_id', view: getStreamId },
  { method: 'POST', path: '/api/v1/default_streams', view: addDefaultStream },
  { method: 'DELETE', path: '/api/v1/default_streams', view: removeDefaultStream },

  // Anonymous: spectators list a web-public channel's topics (the view refuses anything else).
  { method: 'GET', path: '/api/v1/users/me/:stream_id/topics', view: getTopics, auth: 'anonymous' },
  { method: 'POST', path: '/api/v1/user_topics', view: updateUserTopic },
  { method: 'PATCH', path: '/api/v1/users/me/subscriptions/muted_topics', view: updateMutedTopic },

  { method: 'POST', path: '/api/v1/channel_folders/create', view: createChannelFolder },
  { method: 'POST', path: '/api/v1/channel_folders', view: createChannelFolder },
  { method: 'GET', path: '/api/v1/channel_folders', view: listChannelFolders },
  { method: 'PATCH', path: '/api/v1/channel_folders/:channel_folder_id', view: updateChannelFolder },
];

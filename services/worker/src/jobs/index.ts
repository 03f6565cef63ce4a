// Every background job the worker runs: one processor per BullMQ queue, each in its own file.
// Keyed by queue name, so a queue of JobData without a processor fails to compile.
import type { JobQueueName } from '@teamchat/bus';
import { deleteTopicProcessor } from './delete-topic';
import { emailProcessor } from './email';
import { markAllReadProcessor } from './mark-all-read';
import { messageNotificationsProcessor } from './message-notifications';
import { outgoingWebhookProcessor } from './outgoing-webhook';
import type { JobProcessor } from './processor';
import { pushDeviceProcessor } from './push-device';
import { pushNotificationProcessor } from './push-notification';
import { pushRemovalProcessor } from './push-removal';
import { realmExportProcessor } from './realm-export';
import { scheduledMessageProcessor } from './scheduled-message';
import { thumbnailProcessor } from './thumbnail';
import { uploadsCleanupProcessor } from './uploads-cleanup';

export type { JobProcessor } from './processor';

const PROCESSORS_BY_QUEUE: { [Name in JobQueueName]: JobProcessor<Name> } = {
  'delete-topic': deleteTopicProcessor,
  'uploads-cleanup': uploadsCleanupProcessor,
  'mark-all-read': markAllReadProcessor,
  'scheduled-message': scheduledMessageProcessor,
  'message-notifications': messageNotificationsProcessor,
  'push-notification': pushNotificationProcessor,
  'push-removal': pushRemovalProcessor,
  'push-device': pushDeviceProcessor,
  email: emailProcessor,
  'realm-export': realmExportProcessor,
  'outgoing-webhook': outgoingWebhookProcessor,
  thumbnail: thumbnailProcessor,
};

export const JOB_PROCESSORS: JobProcessor[] = Object.values(PROCESSORS_BY_QUEUE);

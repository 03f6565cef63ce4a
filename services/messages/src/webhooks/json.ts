// Zulip's JSON formatter (zerver/webhooks/json): any JSON payload, posted as a code block.
import { JsonableError } from '@teamchat/core';
import type { WebhookIntegration } from './integration';
import { pythonJsonReindent } from '../lib/python-json';

export const json: WebhookIntegration = {
  webhookName: 'JSON',
  messages(request) {
    const payload = request.json();
    // Zulip's view takes a JSON object only.
    if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) {
      throw new JsonableError('payload is not a dict');
    }
    return [{ topic: 'JSON', content: '```json\n' + pythonJsonReindent(request.body, 2) + '\n```' }];
  },
};

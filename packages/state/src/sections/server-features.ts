// Register's keys of the server's optional features (Zulip's fetch_initial_state_data for
// realm_billing, realm_embedded_bots, realm_incoming_webhook_bots, stop_words, video_calls and
// giphy), as a self-hosted Zulip server without billing, bot integrations, Zoom or GIPHY sends
// them. The web app requires every one of them at boot.
import { SEARCH_STOP_WORDS } from '@teamchat/domain';
import type { StateSection } from '../registry';

export const SERVER_FEATURE_SECTIONS: StateSection[] = [
  // No billing (Zulip's CORPORATE_ENABLED off): never a sponsorship request pending.
  { eventType: 'realm_billing', fetch: async () => ({ realm_billing: { has_pending_sponsorship_request: false } }) },
  // The bots this server can run inside itself (Zulip's EMBEDDED_BOTS) and the integrations it
  // has a webhook URL for (WEBHOOK_INTEGRATIONS): none of either, so the app offers none.
  { eventType: 'realm_embedded_bots', fetch: async () => ({ realm_embedded_bots: [] }) },
  { eventType: 'realm_incoming_webhook_bots', fetch: async () => ({ realm_incoming_webhook_bots: [] }) },
  { eventType: 'stop_words', fetch: async () => ({ stop_words: SEARCH_STOP_WORDS }) },
  // No Zoom account can be linked here (Zulip: the user's zoom_token is set).
  { eventType: 'video_calls', fetch: async () => ({ has_zoom_token: false }) },
  // No GIPHY_API_KEY: Zulip sends "" and the app hides its GIF picker.
  { eventType: 'giphy', fetch: async () => ({ giphy_api_key: '' }) },
];

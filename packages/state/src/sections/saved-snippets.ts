// Register's saved_snippets: the user's saved snippets (Zulip's do_get_saved_snippets).
import { userSavedSnippets } from '@teamchat/domain';
import type { StateSection } from '../registry';

export const savedSnippetsSection: StateSection = {
  eventType: 'saved_snippets',
  fetch: async ({ db, user }) => ({ saved_snippets: await userSavedSnippets(db, user.id) }),
};

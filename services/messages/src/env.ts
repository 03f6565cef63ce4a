// The messages service's configuration (read here only, validated at boot).
import { env, loadEnv, type EnvOf } from '@teamchat/core';

export const messagesEnvSpec = {
  MARK_ALL_READ_BUDGET_MS: env.int(
    'how long a mark_all_as_read request waits for its job before answering complete: false',
    50_000,
  ),
  MARK_ALL_READ_BATCH_SIZE: env.int('user_message rows the mark-all-read job marks per transaction', 2000),
  MARK_ALL_READ_BATCH_PAUSE_MS: env.int('pause between two mark-all-read batches, to spread the load on PostgreSQL', 0),
  BIG_BLUE_BUTTON_URL: env.string(
    'BigBlueButton server for video calls, e.g. https://bbb.example.com/bigbluebutton/ (empty: none)',
    '',
  ),
  BIG_BLUE_BUTTON_SECRET: env.string("the BigBlueButton server's shared secret (empty: none)", ''),
};

export type MessagesConfig = EnvOf<typeof messagesEnvSpec>;

export function loadMessagesConfig(source: NodeJS.ProcessEnv): MessagesConfig {
  return loadEnv(messagesEnvSpec, source);
}

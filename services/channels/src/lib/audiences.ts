// Kept for actions/subscribe.ts and actions/unsubscribe.ts (being edited elsewhere): the audience
// rules live once in @teamchat/domain (streams.ts); use those names in new code.
export {
  metadataAccessUserIds as peerAudience,
  unsubscribedMetadataAccessUserIds as creationAudience,
} from '@teamchat/domain';

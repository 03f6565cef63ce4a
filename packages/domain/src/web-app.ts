// What Zulip's web app declares about itself when it registers (zerver/lib/home.py): the web
// service's home page registers with it, and the tests register as the app does.

/** The client capabilities Zulip 10.2's web app declares. */
export const WEB_APP_CLIENT_CAPABILITIES = {
  notification_settings_null: true,
  bulk_message_deletion: true,
  user_avatar_url_field_optional: true,
  stream_typing_notifications: true,
  user_settings_object: true,
  linkifier_url_template: true,
  user_list_incomplete: true,
  include_deactivated_groups: true,
  archived_channels: true,
  empty_topic_name: true,
};

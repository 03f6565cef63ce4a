-- A version of what register's realm-wide state shows: users as user objects show them, custom
-- profile fields and their values, user groups with their members, subgroups and settings (realm
-- settings too), linkifiers, code playgrounds, custom emoji and channel folders. Every
-- transaction that changes any of it sets the version to its own transaction id, so two
-- snapshots that read the same version see the same realm-wide state. The event tier keeps those
-- parts of register's state built per version (packages/state/src/realm-state-cache.ts) and
-- checks the version inside the register snapshot.
--
-- Function bodies are escape strings with every semicolon written \073: Prisma's migration
-- runner (the schema engine through the pg adapter) splits a script at every semicolon, quoted
-- or not, and PostgreSQL turns \073 back into one before it reads the body. For the same reason
-- no comment here holds one.
--
-- The triggers are deferred constraint triggers: they run at commit, so a writer holds the
-- version row's lock only for the moment of its commit, and a transaction that changes many
-- rows writes the version once (the WHERE skips it when it already holds this transaction's id).
CREATE TABLE "realm_state_version" (
    "realm_id" INTEGER NOT NULL,
    "version" BIGINT NOT NULL,

    CONSTRAINT "realm_state_version_pkey" PRIMARY KEY ("realm_id")
);

CREATE FUNCTION bump_realm_state_version(target INTEGER) RETURNS VOID LANGUAGE sql AS E'
    INSERT INTO realm_state_version AS v (realm_id, version) VALUES (target, txid_current())
    ON CONFLICT (realm_id) DO UPDATE SET version = EXCLUDED.version WHERE v.version <> EXCLUDED.version\073
';

-- Tables with a realm_id column.
CREATE FUNCTION realm_state_changed_by_realm_row() RETURNS TRIGGER LANGUAGE plpgsql AS E'
BEGIN
    IF TG_OP <> ''DELETE'' THEN PERFORM bump_realm_state_version(NEW.realm_id)\073 END IF\073
    IF TG_OP <> ''INSERT'' AND (TG_OP = ''DELETE'' OR OLD.realm_id <> NEW.realm_id) THEN
        PERFORM bump_realm_state_version(OLD.realm_id)\073
    END IF\073
    RETURN NULL\073
END ';

-- Rows of a user: custom profile field values.
CREATE FUNCTION realm_state_changed_by_user_row() RETURNS TRIGGER LANGUAGE plpgsql AS E'
DECLARE
    target INTEGER\073
BEGIN
    SELECT realm_id INTO target FROM user_profile
     WHERE id = CASE WHEN TG_OP = ''DELETE'' THEN OLD.user_profile_id ELSE NEW.user_profile_id END\073
    IF target IS NOT NULL THEN PERFORM bump_realm_state_version(target)\073 END IF\073
    RETURN NULL\073
END ';

-- Rows of a group: memberships (user_group_id) and subgroups (supergroup_id). A group deleted in
-- the same transaction is gone at commit, and its own trigger has bumped the version.
CREATE FUNCTION realm_state_changed_by_group_row() RETURNS TRIGGER LANGUAGE plpgsql AS E'
DECLARE
    row_data JSONB := to_jsonb(CASE WHEN TG_OP = ''DELETE'' THEN OLD ELSE NEW END)\073
    target INTEGER\073
BEGIN
    SELECT realm_id INTO target FROM user_group
     WHERE id = COALESCE(row_data ->> ''user_group_id'', row_data ->> ''supergroup_id'')::INTEGER\073
    IF target IS NOT NULL THEN PERFORM bump_realm_state_version(target)\073 END IF\073
    RETURN NULL\073
END ';

-- user_profile: only the columns user objects show (not settings, presence or last activity).
CREATE CONSTRAINT TRIGGER realm_state_user_profile
    AFTER INSERT OR DELETE OR UPDATE OF realm_id, email, delivery_email, full_name, role, is_active, is_bot, bot_type,
        bot_owner_id, date_joined, timezone, avatar_source, avatar_version, email_address_visibility
    ON user_profile DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION realm_state_changed_by_realm_row();

CREATE CONSTRAINT TRIGGER realm_state_user_group
    AFTER INSERT OR UPDATE OR DELETE ON user_group DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION realm_state_changed_by_realm_row();

CREATE CONSTRAINT TRIGGER realm_state_group_setting
    AFTER INSERT OR UPDATE OR DELETE ON group_setting DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION realm_state_changed_by_realm_row();

CREATE CONSTRAINT TRIGGER realm_state_custom_profile_field
    AFTER INSERT OR UPDATE OR DELETE ON custom_profile_field DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION realm_state_changed_by_realm_row();

CREATE CONSTRAINT TRIGGER realm_state_linkifier
    AFTER INSERT OR UPDATE OR DELETE ON linkifier DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION realm_state_changed_by_realm_row();

CREATE CONSTRAINT TRIGGER realm_state_realm_playground
    AFTER INSERT OR UPDATE OR DELETE ON realm_playground DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION realm_state_changed_by_realm_row();

CREATE CONSTRAINT TRIGGER realm_state_realm_emoji
    AFTER INSERT OR UPDATE OR DELETE ON realm_emoji DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION realm_state_changed_by_realm_row();

CREATE CONSTRAINT TRIGGER realm_state_channel_folder
    AFTER INSERT OR UPDATE OR DELETE ON channel_folder DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION realm_state_changed_by_realm_row();

CREATE CONSTRAINT TRIGGER realm_state_custom_profile_field_value
    AFTER INSERT OR UPDATE OR DELETE ON custom_profile_field_value DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION realm_state_changed_by_user_row();

CREATE CONSTRAINT TRIGGER realm_state_user_group_membership
    AFTER INSERT OR UPDATE OR DELETE ON user_group_membership DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION realm_state_changed_by_group_row();

CREATE CONSTRAINT TRIGGER realm_state_group_group_membership
    AFTER INSERT OR UPDATE OR DELETE ON group_group_membership DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION realm_state_changed_by_group_row();

-- Existing realms start at version 0 (no transaction id is 0).
INSERT INTO realm_state_version (realm_id, version) SELECT id, 0 FROM realm ON CONFLICT (realm_id) DO NOTHING;

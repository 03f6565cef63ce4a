-- subscription.is_user_active mirrored user_profile.is_active, but the channels service (which
-- owns subscription) never learns of deactivations made by the users service. One source of
-- truth instead: queries join user_profile.
ALTER TABLE "subscription" DROP COLUMN "is_user_active";

-- Uploaded avatars, organisation icons and logos (POST /users/me/avatar, /realm/icon, /realm/logo).
ALTER TABLE "user_profile" ADD COLUMN "avatar_key" TEXT;

ALTER TABLE "realm" ADD COLUMN "icon_source" TEXT NOT NULL DEFAULT 'G',
ADD COLUMN "icon_version" INTEGER NOT NULL DEFAULT 1,
ADD COLUMN "logo_source" TEXT NOT NULL DEFAULT 'D',
ADD COLUMN "logo_version" INTEGER NOT NULL DEFAULT 1,
ADD COLUMN "night_logo_source" TEXT NOT NULL DEFAULT 'D',
ADD COLUMN "night_logo_version" INTEGER NOT NULL DEFAULT 1;

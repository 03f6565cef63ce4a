-- Allowed email domains of an organisation (GET/POST/PATCH/DELETE /realm/domains) and the
-- onboarding steps each user has seen (POST /users/me/onboarding_steps). Both written by the
-- users service.
CREATE TABLE "realm_domain" (
    "id" SERIAL NOT NULL,
    "realm_id" INTEGER NOT NULL,
    "domain" TEXT NOT NULL,
    "allow_subdomains" BOOLEAN NOT NULL DEFAULT false,

    CONSTRAINT "realm_domain_pkey" PRIMARY KEY ("id")
);

CREATE UNIQUE INDEX "realm_domain_realm_id_domain_key" ON "realm_domain"("realm_id", "domain");

ALTER TABLE "realm_domain" ADD CONSTRAINT "realm_domain_realm_id_fkey" FOREIGN KEY ("realm_id") REFERENCES "realm"("id") ON DELETE CASCADE ON UPDATE CASCADE;

CREATE TABLE "onboarding_step" (
    "id" SERIAL NOT NULL,
    "user_profile_id" INTEGER NOT NULL,
    "onboarding_step" TEXT NOT NULL,
    "timestamp" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "onboarding_step_pkey" PRIMARY KEY ("id")
);

CREATE UNIQUE INDEX "onboarding_step_user_profile_id_onboarding_step_key" ON "onboarding_step"("user_profile_id", "onboarding_step");

ALTER TABLE "onboarding_step" ADD CONSTRAINT "onboarding_step_user_profile_id_fkey" FOREIGN KEY ("user_profile_id") REFERENCES "user_profile"("id") ON DELETE CASCADE ON UPDATE CASCADE;

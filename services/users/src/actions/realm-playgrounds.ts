// Code playgrounds (Zulip's do_add_realm_playground / do_remove_realm_playground): checked as
// RealmPlayground.full_clean does, and every change sends the realm's whole list to everyone.

import type { ZulipEventOf } from '@teamchat/bus';
import { JsonableError } from '@teamchat/core';
import { transaction, type Tx } from '@teamchat/db';
import { realmPlaygrounds, urlTemplateHasSafeScheme, lockRealm } from '@teamchat/domain';
import type { BaseDeps } from '@teamchat/runtime';
import { templateVariables } from '../lib/linkifiers';
import { activeUserIds } from '../lib/users';

type Deps = Pick<BaseDeps, 'db' | 'bus'>;

const BLANK = 'This field cannot be blank.';

export interface NewPlayground {
  name: string;
  pygmentsLanguage: string;
  urlTemplate: string;
}

/** Django's ValidationFailureError: the first message, with every field's messages as `errors`. */
class PlaygroundValidationError extends JsonableError {
  constructor(errors: Record<string, string[]>) {
    super(Object.values(errors)[0][0], { data: { errors } });
  }
}

/** RealmPlayground.clean_fields, then clean (a template with `code` as its only variable). */
function checkPlayground(playground: NewPlayground): Record<string, string[]> {
  const errors: Record<string, string[]> = {};
  let variables: Set<string> | null = null;
  if (playground.urlTemplate === '') errors.url_template = [BLANK];
  else {
    variables = templateVariables(playground.urlTemplate);
    // A template whose own text gives an unsafe scheme is refused too, as for linkifiers.
    if (variables === null || !urlTemplateHasSafeScheme(playground.urlTemplate, variables)) {
      errors.url_template = ['Invalid URL template.'];
      variables = null;
    }
  }
  if (playground.name === '') errors.name = [BLANK];
  // Its characters were checked by the view (the model's validator is the same pattern).
  if (playground.pygmentsLanguage === '') errors.pygments_language = [BLANK];
  if (variables !== null) {
    if (!variables.has('code')) errors.__all__ = ['Missing the required variable "code" in the URL template'];
    else if (variables.size !== 1) errors.__all__ = ['"code" should be the only variable present in the URL template'];
  }
  return errors;
}

async function notify(deps: Deps, tx: Tx, realmId: number): Promise<void> {
  const event: ZulipEventOf<'realm_playgrounds'> = {
    type: 'realm_playgrounds',
    realm_playgrounds: await realmPlaygrounds(tx.db, realmId),
  };
  await deps.bus.sendEventOnCommit(tx, realmId, event, await activeUserIds(tx.db, realmId));
}

export async function doAddRealmPlayground(deps: Deps, realmId: number, playground: NewPlayground): Promise<number> {
  const errors = checkPlayground(playground);
  if (Object.keys(errors).length) throw new PlaygroundValidationError(errors);
  return transaction(deps.db, async (tx) => {
    await lockRealm(tx.db, realmId);
    const clash = await tx.db.realmPlayground.findFirst({
      where: { realm_id: realmId, pygments_language: playground.pygmentsLanguage, name: playground.name },
    });
    if (clash) {
      throw new PlaygroundValidationError({
        __all__: ['Realm playground with this Realm, Pygments language and Name already exists.'],
      });
    }
    const created = await tx.db.realmPlayground.create({
      data: {
        realm_id: realmId,
        name: playground.name,
        pygments_language: playground.pygmentsLanguage,
        url_template: playground.urlTemplate,
      },
    });
    await notify(deps, tx, realmId);
    return created.id;
  });
}

export async function doRemoveRealmPlayground(deps: Deps, realmId: number, playgroundId: number): Promise<void> {
  await transaction(deps.db, async (tx) => {
    await lockRealm(tx.db, realmId);
    const removed = await tx.db.realmPlayground.deleteMany({ where: { id: playgroundId, realm_id: realmId } });
    if (removed.count === 0) throw new JsonableError('Invalid playground');
    await notify(deps, tx, realmId);
  });
}

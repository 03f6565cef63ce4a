// A PrismaPg adapter for the migrate CLI only (never used at runtime), working around two
// @prisma/adapter-pg 6.19.3 bugs that only the CLI hits:
//  1. catalog column types (name, "char", oid, ...) cannot be deserialized
//     ("Column type 'name' could not be deserialized", prisma/orm#27403): we report them as text;
//  2. connectToShadowDb() ignores the shadow database name when a connection string is given,
//     and drops the database while its pool is still open: we build the shadow URL ourselves
//     and drop it after the pool has ended.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { PrismaPg } from '@prisma/adapter-pg';

const TEXT_OID = 25;
// "char", name, int2vector, regproc, xid, cid, oidvector, pg_node_tree, aclitem, _aclitem, regtype, xid8
const CATALOG_OIDS = new Set([18, 19, 22, 24, 28, 29, 30, 194, 1033, 1034, 2206, 5069]);

type QueryResultLike = { fields?: { dataTypeID: number }[] };

function reportCatalogTypesAsText(result: unknown): unknown {
  for (const field of (result as QueryResultLike)?.fields ?? []) {
    if (CATALOG_OIDS.has(field.dataTypeID)) field.dataTypeID = TEXT_OID;
  }
  return result;
}

class CatalogFriendlyPool extends pg.Pool {
  constructor(config: pg.PoolConfig) {
    super(config);
    this.on('connect', (client) => {
      const query = client.query.bind(client) as (...args: unknown[]) => Promise<unknown> | undefined;
      // pg.Pool.query calls client.query with a callback; direct callers use the promise.
      (client as unknown as { query: unknown }).query = (...args: unknown[]) => {
        const callback = args[args.length - 1];
        if (typeof callback === 'function') {
          args[args.length - 1] = (err: unknown, result: unknown) => callback(err, reportCatalogTypesAsText(result));
          return query(...args);
        }
        return query(...args)!.then(reportCatalogTypesAsText);
      };
    });
  }
}

function withDatabase(connectionString: string, database: string): string {
  const url = new URL(connectionString);
  url.pathname = `/${database}`;
  return url.toString();
}

export class MigratePgAdapterFactory extends PrismaPg {
  constructor(private readonly connectionString: string) {
    super(new CatalogFriendlyPool({ connectionString }), { disposeExternalPool: true });
  }

  override async connectToShadowDb() {
    const database = `teamchat_shadow_${randomUUID().replace(/-/g, '')}`;
    const admin = new pg.Client({ connectionString: this.connectionString });
    await admin.connect();
    await admin.query(`CREATE DATABASE "${database}"`);
    await admin.end();
    const shadow = new PrismaPg(
      new CatalogFriendlyPool({ connectionString: withDatabase(this.connectionString, database) }),
      {
        disposeExternalPool: true,
      },
    );
    const adapter = await shadow.connect();
    const dispose = adapter.dispose.bind(adapter);
    adapter.dispose = async () => {
      await dispose();
      const dropper = new pg.Client({ connectionString: this.connectionString });
      await dropper.connect();
      await dropper.query(`DROP DATABASE IF EXISTS "${database}"`);
      await dropper.end();
    };
    return adapter;
  }
}

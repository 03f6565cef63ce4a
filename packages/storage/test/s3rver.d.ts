// The parts of s3rver (no published types) the S3 test server uses.
declare module 's3rver' {
  import type { AddressInfo } from 'node:net';

  interface S3rverOptions {
    address?: string;
    port?: number;
    silent?: boolean;
    directory?: string;
    resetOnClose?: boolean;
    allowMismatchedSignatures?: boolean;
    vhostBuckets?: boolean;
    configureBuckets?: { name: string; configs?: Array<string | Buffer> }[];
  }

  /** What s3rver's Koa middleware see of a request. */
  interface S3rverContext {
    method: string;
    path: string;
    query: Record<string, string | string[] | undefined>;
    status: number;
    type: string;
    body: unknown;
  }

  type S3rverMiddleware = (ctx: S3rverContext, next: () => Promise<void>) => Promise<void> | void;

  class S3rver {
    constructor(options?: S3rverOptions);
    /** Koa's middleware stack, composed when the server starts listening. */
    middleware: S3rverMiddleware[];
    run(): Promise<AddressInfo>;
    close(): Promise<void>;
  }

  export = S3rver;
}

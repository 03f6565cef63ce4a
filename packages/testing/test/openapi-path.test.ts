// Where zulip.yaml comes from: ZULIP_OPENAPI_PATH, a shared copy beside the checkout, a copy
// downloaded earlier into var/, else a download checked against the pinned sha256. No test here
// touches the internet: downloads come from data: URLs or from a port nobody listens on.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  resolveZulipOpenApiPath,
  zulipOpenApiPath,
  ZULIP_OPENAPI_SHA256,
  type ZulipOpenApiSources,
} from '../src/openapi';

let workDir: string;
let sources: ZulipOpenApiSources;

/** A data: URL serving `text`, and the sha256 that accepts it. */
function served(text: string): { url: string; sha256: string } {
  const sha256 = createHash('sha256').update(text).digest('hex');
  return { url: `data:text/plain,${encodeURIComponent(text)}`, sha256 };
}

beforeEach(() => {
  workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'openapi-path-'));
  fs.mkdirSync(path.join(workDir, 'checkout'));
  sources = {
    env: {},
    checkoutDir: path.join(workDir, 'checkout'),
    varDir: path.join(workDir, 'checkout', 'var'),
    // Nothing listens on port 1: the connection is refused at once, as when offline.
    url: 'http://127.0.0.1:1/zulip.yaml',
    sha256: ZULIP_OPENAPI_SHA256,
  };
});

afterEach(() => fs.rmSync(workDir, { recursive: true, force: true }));

test('the schema the suite uses is the pinned Zulip 10.2 one', () => {
  const sha256 = createHash('sha256').update(fs.readFileSync(zulipOpenApiPath())).digest('hex');
  expect(sha256).toBe(ZULIP_OPENAPI_SHA256);
});

test('ZULIP_OPENAPI_PATH comes first', () => {
  const copy = path.join(workDir, 'my-zulip.yaml');
  fs.copyFileSync(zulipOpenApiPath(), copy);
  fs.mkdirSync(path.join(workDir, 'shared', 'zulip-openapi'), { recursive: true });
  fs.writeFileSync(path.join(workDir, 'shared', 'zulip-openapi', 'zulip.yaml'), 'openapi: 3.0.1\n');
  expect(resolveZulipOpenApiPath({ ...sources, env: { ZULIP_OPENAPI_PATH: copy } })).toBe(copy);
});

test('a ZULIP_OPENAPI_PATH that does not exist is named in the error', () => {
  const missing = path.join(workDir, 'nowhere.yaml');
  expect(() => resolveZulipOpenApiPath({ ...sources, env: { ZULIP_OPENAPI_PATH: missing } })).toThrow(
    `ZULIP_OPENAPI_PATH is ${missing}, which does not exist`,
  );
});

test('then a shared/zulip-openapi/zulip.yaml beside the checkout', () => {
  const shared = path.join(workDir, 'shared', 'zulip-openapi', 'zulip.yaml');
  fs.mkdirSync(path.dirname(shared), { recursive: true });
  fs.writeFileSync(shared, 'openapi: 3.0.1\n');
  expect(resolveZulipOpenApiPath(sources)).toBe(shared);
});

test('then a download into var/, kept only with the pinned sha256 and used again without the network', () => {
  const schema = served('openapi: 3.0.1\ninfo: {title: test}\n');
  const downloaded = resolveZulipOpenApiPath({ ...sources, ...schema });
  expect(path.dirname(downloaded)).toBe(path.join(sources.varDir, 'zulip-openapi'));
  expect(fs.readFileSync(downloaded, 'utf8')).toContain('title: test');
  // Offline now: the copy in var/ is enough.
  expect(resolveZulipOpenApiPath({ ...sources, sha256: schema.sha256 })).toBe(downloaded);
});

test('offline with no copy anywhere: a clear message says what to do', () => {
  expect(() => resolveZulipOpenApiPath(sources)).toThrow(
    /was not found .+ could not be downloaded from http:\/\/127\.0\.0\.1:1\/zulip\.yaml: .+ZULIP_OPENAPI_PATH/s,
  );
  expect(fs.readdirSync(path.join(sources.varDir, 'zulip-openapi'))).toEqual([]);
});

test('a download whose sha256 is not the pinned one is refused and not kept', () => {
  const tampered = served('openapi: 3.0.1\n# not the published schema\n');
  expect(() => resolveZulipOpenApiPath({ ...sources, url: tampered.url })).toThrow(
    `has sha256 ${tampered.sha256}, not the pinned`,
  );
  expect(fs.readdirSync(path.join(sources.varDir, 'zulip-openapi'))).toEqual([]);
});

test('a copy in var/ with the wrong sha256 is not used', () => {
  const schema = served('openapi: 3.0.1\n');
  const stale = resolveZulipOpenApiPath({ ...sources, ...schema });
  fs.writeFileSync(stale, 'changed since\n');
  expect(() => resolveZulipOpenApiPath({ ...sources, sha256: schema.sha256 })).toThrow(/could not be downloaded/);
});

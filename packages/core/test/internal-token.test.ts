import { signInternalToken, UnauthorizedError, verifyInternalToken, type InternalClaims } from '../src';

const SECRET = 'internal-token-test-secret-0123456789';
const claims: InternalClaims = {
  user: { userId: 7, realmId: 2, role: 400, email: 'user7@example.com', isBot: false },
  realmId: 2,
  method: 'GET',
  path: '/api/v1/events',
};

describe('internal tokens', () => {
  beforeEach(() => jest.useFakeTimers({ now: new Date('2026-11-22T10:00:00Z') }));
  afterEach(() => jest.useRealTimers());

  test('the same claims reuse one token for half its life; other claims get their own', () => {
    const first = signInternalToken(SECRET, claims);
    jest.advanceTimersByTime(29_000);
    expect(signInternalToken(SECRET, claims)).toBe(first);
    expect(signInternalToken(SECRET, { ...claims, path: '/api/v1/users/me' })).not.toBe(first);
    expect(signInternalToken(SECRET, { ...claims, user: { ...claims.user!, role: 200 } })).not.toBe(first);
    expect(signInternalToken(`${SECRET}-other`, claims)).not.toBe(first);

    jest.advanceTimersByTime(2_000);
    const renewed = signInternalToken(SECRET, claims);
    expect(renewed).not.toBe(first);
    expect(verifyInternalToken(SECRET, renewed, 'GET', '/api/v1/events')).toEqual(claims);
    // The first token is still valid for the rest of its 60 seconds.
    expect(verifyInternalToken(SECRET, first, 'GET', '/api/v1/events')).toEqual(claims);
  });

  test('a token already verified is still bound to its method, path, secret and lifetime', () => {
    const token = signInternalToken(SECRET, { ...claims, path: '/api/v1/users/me/presence', method: 'POST' });
    expect(verifyInternalToken(SECRET, token, 'POST', '/api/v1/users/me/presence').user?.userId).toBe(7);
    expect(() => verifyInternalToken(SECRET, token, 'POST', '/api/v1/users/me')).toThrow(UnauthorizedError);
    expect(() => verifyInternalToken(SECRET, token, 'GET', '/api/v1/users/me/presence')).toThrow(UnauthorizedError);
    expect(() => verifyInternalToken(`${SECRET}-other`, token, 'POST', '/api/v1/users/me/presence')).toThrow(
      UnauthorizedError,
    );

    jest.advanceTimersByTime(59_000);
    expect(verifyInternalToken(SECRET, token, 'POST', '/api/v1/users/me/presence').user?.userId).toBe(7);
    jest.advanceTimersByTime(1_000);
    expect(() => verifyInternalToken(SECRET, token, 'POST', '/api/v1/users/me/presence')).toThrow(
      'Invalid internal token',
    );
  });

  test('a tampered token is refused', () => {
    const token = signInternalToken(SECRET, claims);
    verifyInternalToken(SECRET, token, 'GET', '/api/v1/events');
    const [header, payload, signature] = token.split('.');
    const forgedPayload = Buffer.from(
      JSON.stringify({
        ...JSON.parse(Buffer.from(payload, 'base64url').toString()),
        u: [1, 2, 400, 'owner@example.com', false],
      }),
    ).toString('base64url');
    expect(() =>
      verifyInternalToken(SECRET, `${header}.${forgedPayload}.${signature}`, 'GET', '/api/v1/events'),
    ).toThrow(UnauthorizedError);
    expect(() => verifyInternalToken(SECRET, undefined, 'GET', '/api/v1/events')).toThrow(
      'Requests must come through the gateway',
    );
  });
});

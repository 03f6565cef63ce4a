// Errors of a store that is away or changing hands are answered 503 (clients retry), any other
// unexpected error 500: the messages ioredis, Redis Cluster, pg and Prisma use for the first kind.
import { asJsonableError } from '../src';

test.each([
  'Connection is closed.',
  'CLUSTERDOWN The cluster is down',
  'Too many Cluster redirections. Last error: Error: Connection is closed.',
  'MOVED 9439 127.0.0.1:20324',
  'ASK 12 127.0.0.1:7001',
  'TRYAGAIN Multiple keys request during rehashing of slot',
  'LOADING Redis is loading the dataset in memory',
  'NOSCRIPT No matching script. Please use EVAL.',
  'Redis write not confirmed by its replicas: 0 of 1 replicas within 500 ms',
  'Redis connection closed with the command in flight',
])('"%s" is a store away: 503', (message) => {
  const answered = asJsonableError(new Error(message));
  expect([answered.status, answered.message]).toEqual([503, 'Service temporarily unavailable, please try again']);
});

test.each(['MOVED the furniture', 'TypeError: x is undefined', "ERR unknown command 'FOO'"])(
  '"%s" is a bug: 500',
  (message) => {
    expect(asJsonableError(new Error(message)).status).toBe(500);
  },
);

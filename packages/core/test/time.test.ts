import { fulfilledWithin } from '../src/time';

const after = <T>(ms: number, value: T) => new Promise<T>((resolve) => setTimeout(() => resolve(value), ms));

describe('fulfilledWithin', () => {
  test('true when the work fulfils in time', async () => {
    await expect(fulfilledWithin(after(10, 'done'), 1_000)).resolves.toBe(true);
  });

  test('false when the work is still pending at the bound', async () => {
    await expect(fulfilledWithin(new Promise(() => undefined), 20)).resolves.toBe(false);
  });

  test('rejects with the work when it fails in time', async () => {
    await expect(fulfilledWithin(Promise.reject(new Error('refused')), 1_000)).rejects.toThrow('refused');
  });
});

// Which replica owns which intake partition (assignPartitions): a replica joining or leaving must
// move about partitions / replicas of them, not most of them (every handover pauses a
// partition's fan-out for a lease round), and each replica's share stays near even.
import { assignPartitions } from '../src/lib/intake';

const moved = (before: string[], after: string[]) =>
  before.filter((owner, partition) => owner !== after[partition]).length;

function replicaIds(set: number, count: number): string[] {
  // Ids as replicas name themselves (host-pid-random), fixed so that the test is the same every run.
  return Array.from(
    { length: count },
    (_, i) => `events-${set}-${1000 + 37 * i}-${((set * 7919 + i * 104729) % 65536).toString(16)}`,
  );
}

test.each([8, 16, 64, 128])(
  'with %i partitions, a replica joining or leaving moves about 1/N of them',
  (partitions) => {
    const report: string[] = [];
    let totalMoved = 0;
    let totalIdeal = 0;
    for (let set = 0; set < 5; set++) {
      const ids = replicaIds(set, 9);
      for (let n = 1; n < Math.min(9, partitions); n++) {
        const smaller = assignPartitions(partitions, ids.slice(0, n));
        const larger = assignPartitions(partitions, ids.slice(0, n + 1));
        for (const assignment of [smaller, larger]) {
          // Every partition has exactly one owner, one of the live replicas.
          expect(assignment).toHaveLength(partitions);
          expect(assignment.every((owner) => ids.includes(owner))).toBe(true);
        }
        // Balance: nobody above ceil(P/N) + 1.
        const loads = new Map<string, number>();
        for (const owner of larger) loads.set(owner, (loads.get(owner) ?? 0) + 1);
        expect(Math.max(...loads.values())).toBeLessThanOrEqual(Math.ceil(partitions / (n + 1)) + 1);
        // N -> N+1 (the new replica's share) and N+1 -> N (the leaving replica's share): the fewest
        // possible is about P/(N+1); allow 1.5 P/N and two.
        const joining = moved(smaller, larger);
        const leaving = moved(larger, smaller);
        const bound = 1.5 * (partitions / n) + 2;
        report.push(
          `${set}: ${n}->${n + 1} moved ${joining}, ${n + 1}->${n} moved ${leaving} (bound ${bound.toFixed(1)})`,
        );
        expect({ n, joining, within: joining <= bound }).toEqual({ n, joining, within: true });
        expect({ n, leaving, within: leaving <= bound }).toEqual({ n, leaving, within: true });
        totalMoved += joining + leaving;
        totalIdeal += (2 * partitions) / (n + 1);
      }
    }
    // On average close to the fewest possible.
    console.log(
      `${partitions} partitions: moved ${totalMoved}, 1/N would be ${totalIdeal.toFixed(0)}\n${report.join('\n')}`,
    );
    expect(totalMoved / totalIdeal).toBeLessThan(1.3);
  },
);

test('the assignment depends on the set of live replicas only, not their order', () => {
  const ids = replicaIds(9, 5);
  expect(assignPartitions(32, [...ids].reverse())).toEqual(assignPartitions(32, ids));
});

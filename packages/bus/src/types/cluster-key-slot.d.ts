// cluster-key-slot (ioredis's own slot function) ships without types.
declare module 'cluster-key-slot' {
  /** The Redis Cluster hash slot of a key, honouring {hash tags}. */
  function calculateSlot(key: string): number;
  export = calculateSlot;
}

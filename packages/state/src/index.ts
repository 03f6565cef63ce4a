export * from './registry';
export { STATE_SECTIONS } from './sections';
export { RealmStateCache } from './realm-state-cache';

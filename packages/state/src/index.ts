export * from './registry';
export { STATE_SECTIONS } from './sections';

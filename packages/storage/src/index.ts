export * from './storage';
export { LocalDiskStorage } from './local';
export { S3Storage, s3ClientConfig, type S3StorageConfig } from './s3';
export { storageEnvSpec, loadStorageConfig, createStorage, type StorageConfig } from './config';

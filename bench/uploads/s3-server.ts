// Child process of the uploads benchmark: the S3-protocol server (s3rver with the ListParts
// and AbortMultipartUpload fixes), in its own process so it competes with neither the client
// nor the system under test. Prints its settings as one JSON line; stops on SIGTERM.
// S3_SERVER_ADDRESS: where it listens (default 127.0.0.1; tests/multihost puts it on a host's address).
import { startS3TestServer } from '@teamchat/storage/test/s3-test-server';

async function main() {
  const server = await startS3TestServer({ bucket: 'bench-uploads', address: process.env.S3_SERVER_ADDRESS });
  process.stdout.write(`${JSON.stringify({ endpoint: server.endpoint, config: server.config, env: server.env })}\n`);
  process.on('SIGTERM', () => {
    void server.close().then(() => process.exit(0));
  });
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});

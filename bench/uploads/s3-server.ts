// Child process of the uploads benchmark: the S3-protocol server (s3rver with the ListParts
// and AbortMultipartUpload fixes), in its own process so it competes with neither the client
// nor the system under test. Prints its settings as one JSON line; stops on SIGTERM.
import { startS3TestServer } from '@teamchat/storage/test/s3-test-server';

async function main() {
  const server = await startS3TestServer({ bucket: 'bench-uploads' });
  process.stdout.write(`${JSON.stringify({ endpoint: server.endpoint, config: server.config, env: server.env })}\n`);
  process.on('SIGTERM', () => {
    void server.close().then(() => process.exit(0));
  });
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});

// A connection-level round-robin balancer (what a Kubernetes Service does in front of the
// event-tier pods): each TCP connection goes to the next backend. Backends come as arguments.
import net from 'node:net';

const backends = process.argv.slice(2).map(Number);
let next = 0;
const server = net.createServer((client) => {
  const upstream = net.connect(backends[next++ % backends.length], '127.0.0.1');
  client.pipe(upstream).pipe(client);
  const close = () => {
    client.destroy();
    upstream.destroy();
  };
  client.on('error', close);
  upstream.on('error', close);
  client.on('close', close);
  upstream.on('close', close);
});
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  console.log(JSON.stringify({ port: server.address().port }));
});

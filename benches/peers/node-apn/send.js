#!/usr/bin/env node
// Peer of Herald's load benchmark (benches/load.rs): @parse/node-apn sends N
// notifications to the APNs simulator as fast as it can, with token auth,
// the same payload and headers as Herald, and the same connection count and
// stream limit. Prints one JSON line on stdout: {"sent", "failed", "elapsed_ms",
// "first_error"}.
//
//   node send.js --address 127.0.0.1:8443 --ca ca.pem --key apns_key.p8 \
//     --key-id ABCDE12345 --team-id TEAM123456 --topic com.herald.demo \
//     --payload payload.json --tokens 200000 [--token-offset 0] \
//     [--connections 4] [--in-flight 4000] [--priority 5] [--push-type alert]
//
// Device tokens are the 64-hex-digit rendering of token-offset + i: the
// simulator accepts any, and their content costs a sender nothing. (Herald
// reads its tokens from its store, where the benchmark seeds random-looking
// ones: those compress as real tokens do.)

'use strict';

const fs = require('fs');
const apn = require('@parse/node-apn');

function args(argv) {
  const out = {};
  for (let i = 2; i < argv.length; i += 2) {
    if (!argv[i].startsWith('--') || i + 1 >= argv.length) {
      throw new Error(`bad argument ${argv[i]}`);
    }
    out[argv[i].slice(2)] = argv[i + 1];
  }
  for (const k of ['address', 'ca', 'key', 'key-id', 'team-id', 'topic', 'payload', 'tokens']) {
    if (out[k] === undefined) throw new Error(`--${k} is required`);
  }
  return out;
}

async function main() {
  const a = args(process.argv);
  const total = parseInt(a.tokens, 10);
  const offset = BigInt(a['token-offset'] || '0');
  const connections = parseInt(a.connections || '4', 10);
  const inFlight = parseInt(a['in-flight'] || '4000', 10);

  // MultiProvider: a round-robin pool of `clientCount` HTTP/2 sessions, the
  // same connection count as Herald's pool. node-apn connects to
  // https://<address> and passes its options on to tls.connect, whose `port`
  // option wins over the URL's: host and port go separately.
  const sep = a.address.lastIndexOf(':');
  if (sep < 0) throw new Error('--address must be host:port');
  const provider = new apn.MultiProvider({
    token: { key: fs.readFileSync(a.key), keyId: a['key-id'], teamId: a['team-id'] },
    address: a.address.slice(0, sep),
    port: parseInt(a.address.slice(sep + 1), 10),
    ca: fs.readFileSync(a.ca),
    production: false,
    clientCount: connections,
    requestTimeout: 30000,
  });

  const note = new apn.Notification();
  // node-apn JSON.stringify()s the raw payload: give it the object, not the text.
  note.rawPayload = JSON.parse(fs.readFileSync(a.payload, 'utf8'));
  note.topic = a.topic;
  note.pushType = a['push-type'] || 'alert';
  note.priority = parseInt(a.priority || '5', 10);

  let next = 0;
  let sent = 0;
  let failed = 0;
  let firstError = null;
  const started = Date.now();

  // `inFlight` workers, each sending one notification at a time: at most
  // `inFlight` streams open across the pool, like Herald's stream limit.
  async function worker() {
    while (next < total) {
      const i = next++;
      const token = (offset + BigInt(i)).toString(16).padStart(64, '0');
      const r = await provider.send(note, token);
      sent += r.sent.length;
      failed += r.failed.length;
      if (r.failed.length && firstError === null) {
        firstError = JSON.stringify(r.failed[0]);
      }
    }
  }
  const workers = [];
  for (let w = 0; w < Math.min(inFlight, total); w++) workers.push(worker());
  await Promise.all(workers);

  const elapsed = Date.now() - started;
  process.stdout.write(JSON.stringify({ sent, failed, elapsed_ms: elapsed, first_error: firstError }) + '\n');
  provider.shutdown();
  // Sessions may linger on heartbeats; the work is done.
  setTimeout(() => process.exit(0), 100).unref();
}

main().catch(e => {
  process.stderr.write(`node-apn peer: ${e && e.stack ? e.stack : e}\n`);
  process.exit(1);
});

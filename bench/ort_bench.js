// bench/ort_bench.js - the ONNX Runtime peer of bench/peers.py.
//
// A persistent worker: it loads every form of one layer (the .onnx files
// onnx_models.py wrote) into its own InferenceSession once, warms each up,
// then times `session.run` when peers.py asks, so that the interleaved
// rounds measure calls and not process start-up or model loading.
//
//   node ort_bench.js '{"threads": T, "models": {"attention": "a.onnx", ...},
//                       "inputs": {"x": [B, S, E], ...}, "warmup": 2}'
//
// Protocol, one JSON object per line: first the worker prints
//   {"ready": true, "version": "1.x", "forms": {"attention": "ok", "mha": "<error>"}}
// then answers each line read from stdin,
//   {"cmd": "run", "form": "attention", "n": N}  ->  {"ms": [t1, ..., tN]}
//   {"cmd": "quit"}                               ->  exits
// A form whose session could not be created or run reports its error once
// in "forms" and is never timed.

'use strict';

const ort = require('onnxruntime-node');
const readline = require('readline');

function randomTensor(shape) {
  const size = shape.reduce((a, b) => a * b, 1);
  const data = new Float32Array(size);
  for (let i = 0; i < size; ++i) data[i] = Math.random() * 2 - 1;
  return new ort.Tensor('float32', data, shape);
}

function reply(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

async function main() {
  const spec = JSON.parse(process.argv[2]);
  // What the issue asks of every peer: T threads inside the operator, none
  // between operators (the graph is a chain), every graph optimization on.
  const options = {
    executionProviders: ['cpu'],
    intraOpNumThreads: spec.threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  };
  const feeds = {};
  for (const [name, shape] of Object.entries(spec.inputs))
    feeds[name] = randomTensor(shape);

  const sessions = {};
  const forms = {};
  for (const [form, path] of Object.entries(spec.models)) {
    try {
      const session = await ort.InferenceSession.create(path, options);
      for (let i = 0; i < (spec.warmup ?? 2); ++i) await session.run(feeds);
      sessions[form] = session;
      forms[form] = 'ok';
    } catch (e) {
      forms[form] = String(e.message || e).split('\n')[0];
    }
  }
  reply({ ready: true, version: ort.env.versions?.common ?? 'unknown', forms });

  const rl = readline.createInterface({ input: process.stdin });
  for await (const line of rl) {
    if (!line.trim()) continue;
    const cmd = JSON.parse(line);
    if (cmd.cmd === 'quit') break;
    if (cmd.cmd !== 'run' || !sessions[cmd.form]) {
      reply({ error: `cannot run ${JSON.stringify(cmd)}` });
      continue;
    }
    const session = sessions[cmd.form];
    const ms = [];
    for (let i = 0; i < cmd.n; ++i) {
      const t0 = process.hrtime.bigint();
      await session.run(feeds);
      ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
    reply({ ms });
  }
  for (const session of Object.values(sessions)) await session.release();
  process.exit(0);
}

main().catch((e) => {
  reply({ error: String(e.stack || e) });
  process.exit(1);
});

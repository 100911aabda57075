// node engine_parity.mjs STATIC_DIR SET_DIR CASES OUT: the browser engine (static/lib/engine.js and
// engine_core.js, with downloads.js and site.js it imports) with the vendored onnxruntime-web's WebAssembly, run in node on a model set's web
// copies (SET_DIR/web/). CASES: [[route, body], ...]; OUT: [{status, json, ms}, ...] in the same
// order, where a refusal is {status, json: {detail, parameter}} (tests/app/test_engine_node.py).
// Node reads .js files as CommonJS: the ES modules are copied to a temporary folder marked "module".
import fs from "node:fs";
import path from "node:path";
const [staticDir, modelsDir, casesFile, outFile] = process.argv.slice(2);
const tmp = fs.mkdtempSync("/tmp/engine-node-");
process.on("exit", () => fs.rmSync(tmp, { recursive: true, force: true }));
for (const f of ["engine.js", "engine_core.js", "downloads.js", "site.js", "engine_lessons.js", "engine_attention.js"]) fs.copyFileSync(path.join(staticDir, "lib", f), path.join(tmp, f));
fs.writeFileSync(path.join(tmp, "package.json"), '{"type": "module"}');
const vendor = path.join(staticDir, "vendor", "onnxruntime-web");
fs.copyFileSync(path.join(vendor, "ort.wasm.min.js"), path.join(tmp, "ort.mjs"));
fs.copyFileSync(path.join(vendor, "ort-wasm-simd-threaded.js"), path.join(tmp, "ort-wasm-simd-threaded.mjs"));
const ort = await import(path.join(tmp, "ort.mjs"));
ort.env.wasm.numThreads = 1;
ort.env.wasm.wasmPaths = { mjs: "file://" + path.join(tmp, "ort-wasm-simd-threaded.mjs") };
ort.env.wasm.wasmBinary = fs.readFileSync(path.join(vendor, "ort-wasm-simd-threaded.wasm"));
const { Engine } = await import(path.join(tmp, "engine.js"));
const manifest = JSON.parse(fs.readFileSync(path.join(modelsDir, "web", "manifest.json")));
const bytes = {};
for (const [fam, part] of Object.entries(manifest.models)) bytes[fam] = fs.readFileSync(path.join(modelsDir, "web", part.file));
if (fs.existsSync(path.join(modelsDir, "electra.onnx"))) { // no web copy of ELECTRA: the static copy makes it
  bytes.electra = fs.readFileSync(path.join(modelsDir, "electra.onnx"));
  manifest.models.electra = { config: JSON.parse(fs.readFileSync(path.join(modelsDir, "electra.card.json"))).config };
}
const inspection = path.join(modelsDir, "inspection.json");
for (const family of ["gpt", "bert"]) { // the attention page's inspection graphs (the static copy ships them; its logits figure is the server's at export, here the set's inspection.json)
  const file = path.join(modelsDir, family + ".attn.onnx");
  if (!fs.existsSync(file)) continue;
  bytes[family + "_attn"] = fs.readFileSync(file);
  const recorded = fs.existsSync(inspection) ? JSON.parse(fs.readFileSync(inspection))[family] : null;
  manifest.models[family + "_attn"] = { config: JSON.parse(fs.readFileSync(path.join(modelsDir, family + ".card.json"))).config,
    served_logits_max_abs_diff: recorded ? recorded.parity.logits : null };
}
const engine = Engine.create(ort, manifest, bytes);
const { attention } = await import(path.join(tmp, "engine_attention.js"));
const { compare, nsp, electra } = await import(path.join(tmp, "engine_lessons.js"));
const fn = { "/api/generate": "generate", "/api/next-token": "nextToken", "/api/mask-fill": "maskFill" };
const lessons = { "/api/compare": (body) => compare(engine, body), "/api/nsp/predict": (body) => nsp(engine, "/api/nsp/predict", { body }),
  "/api/objectives/electra": (body) => electra(engine, body), "/api/attention": (body) => attention(engine, body) };
const out = [];
for (const [route, body] of JSON.parse(fs.readFileSync(casesFile))) {
  const t0 = performance.now();
  try {
    out.push({ status: 200, json: await (lessons[route] ? lessons[route](body) : engine[fn[route]](body)), ms: performance.now() - t0 });
  } catch (e) {
    if (e.status === undefined) throw e;
    out.push({ status: e.status, json: { detail: e.detail, parameter: e.parameter } });
  }
}
fs.writeFileSync(outFile, JSON.stringify(out));

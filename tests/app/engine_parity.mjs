// node engine_parity.mjs STATIC_DIR SET_DIR CASES OUT: the browser engine (static/lib/engine.js, the
// families' device code in static/families/, and what they import) with the vendored onnxruntime-web's WebAssembly, run in node on a model set's web
// copies (SET_DIR/web/). CASES: [[route, body], ...]; OUT: [{status, json, ms}, ...] in the same
// order, where a refusal is {status, json: {detail, parameter}} (tests/app/test_engine_node.py) and a route
// no family answers on the device is {status: null}.
// Node reads .js files as CommonJS: the ES modules are copied to a temporary folder marked "module".
import fs from "node:fs";
import path from "node:path";
const [staticDir, modelsDir, casesFile, outFile] = process.argv.slice(2);
const tmp = fs.mkdtempSync("/tmp/engine-node-");
process.on("exit", () => fs.rmSync(tmp, { recursive: true, force: true }));
for (const dir of ["lib", "families"]) fs.cpSync(path.join(staticDir, dir), path.join(tmp, dir), { recursive: true });
fs.writeFileSync(path.join(tmp, "package.json"), '{"type": "module"}');
const vendor = path.join(staticDir, "vendor", "onnxruntime-web");
fs.copyFileSync(path.join(vendor, "ort.wasm.min.js"), path.join(tmp, "ort.mjs"));
fs.copyFileSync(path.join(vendor, "ort-wasm-simd-threaded.js"), path.join(tmp, "ort-wasm-simd-threaded.mjs"));
const ort = await import(path.join(tmp, "ort.mjs"));
ort.env.wasm.numThreads = 1;
ort.env.wasm.wasmPaths = { mjs: "file://" + path.join(tmp, "ort-wasm-simd-threaded.mjs") };
ort.env.wasm.wasmBinary = fs.readFileSync(path.join(vendor, "ort-wasm-simd-threaded.wasm"));
const { Engine, route } = await import(path.join(tmp, "lib", "engine.js"));
const manifest = JSON.parse(fs.readFileSync(path.join(modelsDir, "web", "manifest.json")));
const bytes = {};
for (const [fam, part] of Object.entries(manifest.models)) {
  bytes[fam] = fs.readFileSync(path.join(modelsDir, "web", part.file));
  if (part.weights) bytes[fam + ":weights"] = fs.readFileSync(path.join(modelsDir, "web", part.weights.file)); // shared by a family's two graphs
}
for (const card of fs.readdirSync(modelsDir).filter((f) => f.endsWith(".card.json"))) {
  // a family without a web copy (ELECTRA): its served graph, as the static copy ships it (app/static_build.py)
  const fam = card.slice(0, -".card.json".length);
  const file = path.join(modelsDir, fam + ".onnx");
  if (manifest.models[fam] || !fs.existsSync(file)) continue;
  bytes[fam] = fs.readFileSync(file);
  manifest.models[fam] = { config: JSON.parse(fs.readFileSync(path.join(modelsDir, card))).config };
}
const inspection = path.join(modelsDir, "inspection.json");
for (const file of fs.readdirSync(modelsDir).filter((f) => f.endsWith(".attn.onnx")).map((f) => path.join(modelsDir, f))) {
  // the attention page's inspection graphs (the static copy ships them; its logits figure is the server's at export, here the set's inspection.json)
  const family = path.basename(file, ".attn.onnx");
  const recorded = fs.existsSync(inspection) ? JSON.parse(fs.readFileSync(inspection))[family] : null;
  const measured = { served_logits_max_abs_diff: recorded ? recorded.parity.logits : null };
  if (manifest.models[family + "_attn"]) { // a web copy that reads its family's weights file
    Object.assign(manifest.models[family + "_attn"], measured);
    continue;
  }
  bytes[family + "_attn"] = fs.readFileSync(file);
  manifest.models[family + "_attn"] = Object.assign({ config: JSON.parse(fs.readFileSync(path.join(modelsDir, family + ".card.json"))).config }, measured);
}
const engine = Engine.create(ort, manifest, bytes);
const { attention } = await import(path.join(tmp, "lib", "engine_attention.js"));
const { compare } = await import(path.join(tmp, "lib", "engine_lessons.js"));
const lessons = { "/api/compare": (body) => compare(engine, body), "/api/attention": (body) => attention(engine, body) };
const dev = { engine: async () => engine, manifest: async () => manifest };
const out = [];
for (const [path_, body] of JSON.parse(fs.readFileSync(casesFile))) {
  const t0 = performance.now();
  try {
    out.push({ status: 200, json: await (lessons[path_] ? lessons[path_](body) : route(path_).run(dev, body, { path: path_ })), ms: performance.now() - t0 });
  } catch (e) {
    if (e.status === undefined && /^no family answers /.test(e.message)) { out.push({ status: null }); continue; } // not on the device
    if (e.status === undefined) throw e;
    out.push({ status: e.status, json: { detail: e.detail, parameter: e.parameter } });
  }
}
fs.writeFileSync(outFile, JSON.stringify(out));

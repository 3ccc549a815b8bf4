// The bridge's Dawn additions (web/package/webgpu_bridge.js) against the native build's
// (src/gpu/dawn_abi.hpp): the subgroup-matrix feature id, the chained struct's sType and the
// component types must agree, and adapter.info.subgroupMatrixConfigs must reach the library as the
// C struct it reads (Chromium's WebGPU is Dawn: issue 34's tensor cores in the browser). Node only,
// on a fake module memory; < 1 s.
//   node web/tests/bridge_dawn_abi.mjs
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { WebGPUBridge, dawnAbi } from '../package/webgpu_bridge.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const header = readFileSync(`${root}/src/gpu/dawn_abi.hpp`, 'utf8');
let failures = 0;
const check = (name, ok, detail = '') => {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${name}${detail ? `: ${detail}` : ''}`);
  if (!ok) failures++;
};
const constant = (name) => Number(header.match(new RegExp(`constexpr uint32_t ${name} = (0x[0-9A-Fa-f]+)`))[1]);
check('feature id (kFeatureSubgroupMatrix)', dawnAbi.featureSubgroupMatrix === constant('kFeatureSubgroupMatrix'));
check('sType (kSTypeAdapterPropertiesSubgroupMatrixConfigs)',
      dawnAbi.sTypeSubgroupMatrixConfigs === constant('kSTypeAdapterPropertiesSubgroupMatrixConfigs'));
const enumText = header.match(/enum class ComponentType : uint32_t \{([^}]*)\}/)[1];
const native = Object.fromEntries([...enumText.matchAll(/(\w+) = (\d+)/g)].map(([, n, v]) => [n.toLowerCase(), Number(v)]));
check('component types', JSON.stringify(native) === JSON.stringify(dawnAbi.componentTypes),
      `${JSON.stringify(native)} vs ${JSON.stringify(dawnAbi.componentTypes)}`);

// A module's memory and allocator, faked: the bridge only needs memory, sg_alloc and sg_free.
const memory = new WebAssembly.Memory({ initial: 1 });
let top = 1024;
const freed = [];
const bridge = new WebGPUBridge({
  info: { vendor: 'nvidia', architecture: 'hopper', device: 'H200', description: '',
          subgroupMinSize: 32, subgroupMaxSize: 32,
          subgroupMatrixConfigs: [{ componentType: 'f16', resultComponentType: 'f32', M: 16, N: 16, K: 16 },
                                  { componentType: 'i8', resultComponentType: 'i32', M: 16, N: 8, K: 32 }] },
  features: new Set(['shader-f16', 'subgroups', 'chromium-experimental-subgroup-matrix']),
  limits: {},
});
bridge.attach({ memory, sg_alloc: (n) => { const p = top; top += (n + 7) & ~7; return p; },
                sg_free: (p) => freed.push(p) });
// Node 20 has no JSPI; the two waiting imports are wrapped in WebAssembly.Suspending, unused here.
if (typeof WebAssembly.Suspending !== 'function') WebAssembly.Suspending = function Suspending(f) { return f; };
const fns = bridge.imports();
const adapter = fns.wgpuInstanceEnumerateAdapters ? (() => { const out = 16; fns.wgpuInstanceEnumerateAdapters(0, 0, out);
  return new DataView(memory.buffer).getUint32(out, true); })() : 0;
const view = () => new DataView(memory.buffer);
const info = 64, chained = 256;  // WGPUAdapterInfo, and the chained configs struct after it
view().setUint32(info, chained, true);  // nextInChain
view().setUint32(chained, 0, true);
view().setUint32(chained + 4, dawnAbi.sTypeSubgroupMatrixConfigs, true);
fns.wgpuAdapterGetInfo(adapter, info);
const count = view().getUint32(chained + 8, true), list = view().getUint32(chained + 12, true);
const configs = [];
for (let i = 0; i < count; i++) configs.push([0, 4, 8, 12, 16].map((o) => view().getUint32(list + 20 * i + o, true)));
check('configs written into the chained struct', JSON.stringify(configs) === JSON.stringify([[2, 1, 16, 16, 16], [6, 4, 16, 8, 32]]),
      JSON.stringify(configs));
fns.wgpuAdapterPropertiesSubgroupMatrixConfigsFreeMembers(chained);
check('configs freed by the Dawn free function', freed.includes(list));
const features = 512;
fns.wgpuAdapterGetFeatures(adapter, features);
const ids = [];
for (let i = 0; i < view().getUint32(features, true); i++) ids.push(view().getUint32(view().getUint32(features + 4, true) + 4 * i, true));
check('the feature listed by its Dawn id', ids.includes(dawnAbi.featureSubgroupMatrix), ids.map((x) => x.toString(16)).join(' '));
if (failures) {
  console.error(`${failures} check(s) failed`);
  process.exit(1);
}

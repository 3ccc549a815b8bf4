// Counts the WebGPU calls the surfgrad package makes in this worker (dispatches, submits, buffer
// writes, readbacks), by wrapping the browser's own prototypes before the package is loaded: the
// package's bridge (web/package/webgpu_bridge.js) calls e.g. pass.dispatchWorkgroups, which lands
// here. One counter increment a call; the package is not changed. Used by scale-worker.js to
// report the dispatches per t-SNE iteration that the page issues (issue 32's gap to native).
export const counts = { dispatches: 0, submits: 0, writeBuffers: 0, mapAsyncs: 0 };

function wrap(proto, name, key) {
  const f = proto?.[name];
  if (typeof f !== 'function' || f.__counted) return;
  const counted = function (...args) { counts[key]++; return f.apply(this, args); };
  counted.__counted = true;
  proto[name] = counted;
}

if (typeof self.GPUComputePassEncoder === 'function') {
  wrap(self.GPUComputePassEncoder.prototype, 'dispatchWorkgroups', 'dispatches');
  wrap(self.GPUComputePassEncoder.prototype, 'dispatchWorkgroupsIndirect', 'dispatches');
  wrap(self.GPUQueue.prototype, 'submit', 'submits');
  wrap(self.GPUQueue.prototype, 'writeBuffer', 'writeBuffers');
  wrap(self.GPUBuffer.prototype, 'mapAsync', 'mapAsyncs');
}

// Per-iteration counts over a map's layout phase: feed it every onProgress({ phase, done }); the
// first and last 'optimise' progress bracket the iterations counted.
export function layoutCounter() {
  let first = null, last = null;
  return {
    progress({ phase, done }) {
      if (phase !== 'optimise' && phase !== 'layout') return; // (the library's name: map_pipeline.cpp)
      const now = { done, ...counts };
      if (!first) first = now; else last = now;
    },
    perIteration() {
      if (!first || !last || last.done <= first.done) return null;
      const it = last.done - first.done, out = { iterations: it };
      for (const k of Object.keys(counts)) out[k] = Math.round(((last[k] - first[k]) / it) * 100) / 100;
      return out;
    },
  };
}

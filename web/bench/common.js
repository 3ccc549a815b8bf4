// Helpers shared by the page (peers.js) and its worker (peers-worker.js).

// mulberry32: a small seeded PRNG in [0, 1), so the runs are repeatable.
export function seeded(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function rowsOf(points, n, d) {
  const rows = new Array(n);
  for (let i = 0; i < n; i++) rows[i] = Array.from(points.subarray(i * d, (i + 1) * d));
  return rows;
}
export function flatten(rows) {
  const out = new Float32Array(rows.length * 2);
  rows.forEach((r, i) => { out[2 * i] = r[0]; out[2 * i + 1] = r[1]; });
  return out;
}

// The few WASI (preview 1) calls surfgrad.wasm makes, for a browser: stdout and stderr go to the
// console, clocks to performance.now/Date.now, the environment is empty, and there is no file
// system (the library reads files as bytes handed over from JavaScript), so opening one fails
// with ENOSYS and the library reports it as an I/O error.
const ERRNO_SUCCESS = 0;
const ERRNO_BADF = 8;
const ERRNO_NOSYS = 52;

export class ProcessExit extends Error {
  constructor(code) {
    super(`surfgrad.wasm exited with code ${code}`);
    this.code = code;
  }
}

export function wasiImports(getMemory, { stdout = console.log, stderr = console.warn } = {}) {
  const view = () => new DataView(getMemory().buffer);
  const lines = { 1: '', 2: '' };
  const decoder = new TextDecoder();
  return {
    fd_write(fd, iovs, count, written) {
      if (fd !== 1 && fd !== 2) return ERRNO_BADF;
      const v = view();
      let total = 0;
      for (let i = 0; i < count; i++) {
        const p = v.getUint32(iovs + 8 * i, true);
        const n = v.getUint32(iovs + 8 * i + 4, true);
        lines[fd] += decoder.decode(new Uint8Array(getMemory().buffer, p, n));
        total += n;
      }
      let nl;
      while ((nl = lines[fd].indexOf('\n')) >= 0) {
        (fd === 1 ? stdout : stderr)(lines[fd].slice(0, nl));
        lines[fd] = lines[fd].slice(nl + 1);
      }
      v.setUint32(written, total, true);
      return ERRNO_SUCCESS;
    },
    fd_read: () => ERRNO_BADF,
    fd_close: () => ERRNO_SUCCESS,
    fd_seek: () => ERRNO_BADF,
    fd_fdstat_get(fd, p) {
      if (fd > 2) return ERRNO_BADF;
      const v = view();
      v.setUint8(p, 2);  // character device
      v.setUint16(p + 2, 0, true);
      v.setBigUint64(p + 8, 0n, true);
      v.setBigUint64(p + 16, 0n, true);
      return ERRNO_SUCCESS;
    },
    fd_fdstat_set_flags: () => ERRNO_NOSYS,
    fd_prestat_get: () => ERRNO_BADF,  // no preopened directories: no file system
    fd_prestat_dir_name: () => ERRNO_BADF,
    path_open: () => ERRNO_NOSYS,
    environ_sizes_get(count, size) {
      view().setUint32(count, 0, true);
      view().setUint32(size, 0, true);
      return ERRNO_SUCCESS;
    },
    environ_get: () => ERRNO_SUCCESS,
    args_sizes_get(count, size) {
      view().setUint32(count, 0, true);
      view().setUint32(size, 0, true);
      return ERRNO_SUCCESS;
    },
    args_get: () => ERRNO_SUCCESS,
    clock_time_get(id, precision, out) {
      // 0: realtime, 1: monotonic (process and thread clocks are monotonic here too).
      const ns = id === 0 ? BigInt(Date.now()) * 1000000n : BigInt(Math.round(performance.now() * 1e6));
      view().setBigUint64(out, ns, true);
      return ERRNO_SUCCESS;
    },
    clock_res_get(id, out) {
      view().setBigUint64(out, 1000n, true);
      return ERRNO_SUCCESS;
    },
    random_get(p, n) {
      const bytes = new Uint8Array(getMemory().buffer, p, n);
      for (let i = 0; i < n; i += 65536) crypto.getRandomValues(bytes.subarray(i, Math.min(n, i + 65536)));
      return ERRNO_SUCCESS;
    },
    sched_yield: () => ERRNO_SUCCESS,
    proc_exit(code) {
      throw new ProcessExit(code);
    },
    poll_oneoff: () => ERRNO_NOSYS,
    fd_filestat_get: () => ERRNO_BADF,
    path_filestat_get: () => ERRNO_NOSYS,
    fd_readdir: () => ERRNO_BADF,
    fd_pread: () => ERRNO_BADF,
    fd_pwrite: () => ERRNO_BADF,
    path_create_directory: () => ERRNO_NOSYS,
    path_unlink_file: () => ERRNO_NOSYS,
    path_rename: () => ERRNO_NOSYS,
    path_remove_directory: () => ERRNO_NOSYS,
    fd_sync: () => ERRNO_SUCCESS,
    fd_advise: () => ERRNO_SUCCESS,
    fd_allocate: () => ERRNO_NOSYS,
    fd_datasync: () => ERRNO_SUCCESS,
    fd_tell: () => ERRNO_BADF,
    fd_renumber: () => ERRNO_BADF,
    path_readlink: () => ERRNO_NOSYS,
    path_symlink: () => ERRNO_NOSYS,
    path_link: () => ERRNO_NOSYS,
    path_filestat_set_times: () => ERRNO_NOSYS,
    fd_filestat_set_size: () => ERRNO_NOSYS,
    fd_filestat_set_times: () => ERRNO_NOSYS,
    fd_fdstat_set_rights: () => ERRNO_NOSYS,
    sock_accept: () => ERRNO_NOSYS,
    sock_recv: () => ERRNO_NOSYS,
    sock_send: () => ERRNO_NOSYS,
    sock_shutdown: () => ERRNO_NOSYS,
    proc_raise: () => ERRNO_NOSYS,
  };
}

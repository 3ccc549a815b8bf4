// coop_wgpu CASE.wgsl [sizes] [--info]: the cooperative-matrix probe through the Rust `wgpu` 29 crate
// (naga 29), which — unlike wgpu-native 29's C API — can enable wgpu's experimental features.
// It compiles one case written by `surfgrad bench coop --dump DIR`, reports naga's error or
// runs the matmul: float64 check, then timing (wall clock around one submission of R dispatches).
use std::time::Instant;
use wgpu::util::DeviceExt;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = &args[1];
    let sizes: Vec<u32> = args.get(2).map(|s| s.split(',').map(|x| x.parse().unwrap()).collect()).unwrap_or(vec![64, 4096]);
    let src = std::fs::read_to_string(path).unwrap();
    let first = src.lines().next().unwrap();
    let field = |k: &str| -> u32 {
        first.split_whitespace().find_map(|w| w.strip_prefix(&format!("{k}="))).map(|v| v.parse().unwrap()).unwrap_or(0)
    };
    let name = first.split_whitespace().nth(2).unwrap_or("?").to_string();
    let (matmul, tile, rows, cols, ab16, c16) =
        (field("matmul") == 1, field("tile"), field("rows"), field("cols"), field("ab16") == 1, field("c16") == 1);

    let mut idesc = wgpu::InstanceDescriptor::new_without_display_handle();
    idesc.backends = wgpu::Backends::VULKAN;
    let instance = wgpu::Instance::new(idesc);
    let adapter = pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
        power_preference: wgpu::PowerPreference::HighPerformance,
        ..Default::default()
    }))
    .expect("no adapter");
    let info = adapter.get_info();
    let verbose = args.iter().any(|a| a == "--info");
    if verbose {
        println!("adapter {} ({:?}, driver {} {})", info.name, info.backend, info.driver, info.driver_info);
        println!(
            "EXPERIMENTAL_COOPERATIVE_MATRIX offered: {}",
            adapter.features().contains(wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX)
        );
        for p in adapter.cooperative_matrix_properties() {
            println!(
                "  config M={} N={} K={} AB={:?} CR={:?} saturating={}",
                p.m_size, p.n_size, p.k_size, p.ab_type, p.cr_type, p.saturating_accumulation
            );
        }
    }
    let features = wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX | wgpu::Features::SHADER_F16;
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: None,
        required_features: features,
        required_limits: adapter.limits(),
        // SAFETY: a probe; this is the opt-in that wgpu-native 29's C API does not expose.
        experimental_features: unsafe { wgpu::ExperimentalFeatures::enabled() },
        memory_hints: wgpu::MemoryHints::Performance,
        trace: wgpu::Trace::Off,
    }))
    .expect("device");
    if verbose {
        return;
    }

    let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let t0 = Instant::now();
    // Unchecked, like surfgrad's trusted (validated) kernels.
    let module = unsafe {
        device.create_shader_module_trusted(
            wgpu::ShaderModuleDescriptor { label: Some(&name), source: wgpu::ShaderSource::Wgsl(src.as_str().into()) },
            wgpu::ShaderRuntimeChecks::unchecked(),
        )
    };
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: None,
        layout: None,
        module: &module,
        entry_point: Some("main"),
        compilation_options: Default::default(),
        cache: None,
    });
    if let Some(e) = pollster::block_on(scope.pop()) {
        println!("case {name}: REFUSED\n  {e}");
        std::process::exit(10);
    }
    println!("case {name}: compiled in {:.0} ms", t0.elapsed().as_secs_f64() * 1e3);
    if !matmul {
        return;
    }
    let mut status = 0;
    for &n in &sizes {
        let (m, nn, k) = (n as usize, n as usize, n as usize);
        let (bm, bn) = ((rows * tile) as usize, (cols * tile) as usize);
        if m % bm != 0 || nn % bn != 0 || k % tile as usize != 0 {
            continue;
        }
        let mut seed = 0x9E3779B97F4A7C15u64 ^ n as u64;
        let mut rnd = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            ((seed >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0) as f32
        };
        let mut host = |len: usize| -> (Vec<f64>, Vec<u8>) {
            let mut vals = Vec::with_capacity(len);
            let mut bytes = Vec::with_capacity(len * 4);
            for _ in 0..len {
                let r = rnd();
                if ab16 {
                    let h = half::f16::from_f32(r);
                    vals.push(h.to_f64());
                    bytes.extend_from_slice(&h.to_bits().to_le_bytes());
                } else {
                    vals.push(r as f64);
                    bytes.extend_from_slice(&r.to_le_bytes());
                }
            }
            (vals, bytes)
        };
        let (a, abytes) = host(m * k);
        let (b, bbytes) = host(k * nn);
        let usage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST;
        let ba = device.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: None, contents: &abytes, usage });
        let bb = device.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: None, contents: &bbytes, usage });
        let csize = (m * nn * if c16 { 2 } else { 4 }) as u64;
        let bc = device.create_buffer(&wgpu::BufferDescriptor { label: None, size: csize, usage, mapped_at_creation: false });
        let mut meta = vec![0u8; 1024];
        for (i, v) in [m as u32, nn as u32, k as u32].iter().enumerate() {
            meta[i * 4..i * 4 + 4].copy_from_slice(&v.to_le_bytes());
        }
        let bmeta = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: None,
            contents: &meta,
            usage: wgpu::BufferUsages::UNIFORM,
        });
        let bg = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &pipeline.get_bind_group_layout(0),
            entries: &[
                wgpu::BindGroupEntry { binding: 0, resource: ba.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 1, resource: bb.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 2, resource: bc.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 3, resource: bmeta.as_entire_binding() },
            ],
        });
        let groups = ((nn / bn) as u32, (m / bm) as u32);
        let run = |reps: usize| {
            let mut enc = device.create_command_encoder(&Default::default());
            for _ in 0..reps {
                let mut pass = enc.begin_compute_pass(&Default::default());
                pass.set_pipeline(&pipeline);
                pass.set_bind_group(0, &bg, &[]);
                pass.dispatch_workgroups(groups.0, groups.1, 1);
            }
            queue.submit([enc.finish()]);
            device.poll(wgpu::PollType::wait_indefinitely()).unwrap();
        };
        run(1); // C = A·B + 0
        let staging = device.create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size: csize,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut enc = device.create_command_encoder(&Default::default());
        enc.copy_buffer_to_buffer(&bc, 0, &staging, 0, csize);
        queue.submit([enc.finish()]);
        staging.slice(..).map_async(wgpu::MapMode::Read, |_| {});
        device.poll(wgpu::PollType::wait_indefinitely()).unwrap();
        let out: Vec<f64> = {
            let view = staging.slice(..).get_mapped_range();
            if c16 {
                view.chunks_exact(2).map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f64()).collect()
            } else {
                view.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64).collect()
            }
        };
        let check_rows: Vec<usize> = if m <= 512 { (0..m).collect() } else { (0..16).map(|i| (i * 977 + 5) % m).collect() };
        let (mut num, mut den, mut num_t, mut max_abs) = (0f64, 0f64, 0f64, 0f64);
        let mut reference = vec![0f64; nn];
        for &r in &check_rows {
            reference.iter_mut().for_each(|x| *x = 0.0);
            for kk in 0..k {
                let av = a[r * k + kk];
                let brow = &b[kk * nn..(kk + 1) * nn];
                for j in 0..nn {
                    reference[j] += av * brow[j];
                }
            }
            for j in 0..nn {
                let d = out[r * nn + j] - reference[j];
                num += d * d;
                den += reference[j] * reference[j];
                max_abs = max_abs.max(d.abs());
                let dt = out[j * nn + r] - reference[j];
                num_t += dt * dt;
            }
        }
        let err = (num / den).sqrt();
        let tol = if ab16 { if c16 { 5e-2 } else { 1e-3 } } else { 1e-5 };
        let ok = err.is_finite() && err < tol;
        println!(
            "  {n}³: normalised error vs float64 {err:.3e} (max abs {max_abs:.3e}; vs the transpose {:.3e}) over {} rows: {}",
            (num_t / den).sqrt(),
            check_rows.len(),
            if ok { "ok" } else { "WRONG" }
        );
        if !ok {
            status = 20;
        }
        // Timing: warm-up, then the median of 5 submissions of R dispatches each.
        let flop = 2.0 * (m * nn * k) as f64;
        let reps = ((2e12 / flop) as usize).clamp(3, 200);
        run(reps.min(20));
        let mut times = vec![];
        for _ in 0..5 {
            let t = Instant::now();
            run(reps);
            times.push(t.elapsed().as_secs_f64() * 1e3 / reps as f64);
        }
        times.sort_by(|x, y| x.partial_cmp(y).unwrap());
        let ms = times[2];
        println!("  {n}³: {ms:.3} ms per product (median of 5 × {reps}, wall clock), {:.2} TFLOP/s", flop / (ms * 1e9));
    }
    std::process::exit(status);
}

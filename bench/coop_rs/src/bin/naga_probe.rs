// naga_probe FILE.wgsl...: naga 29 alone (no GPU): WGSL front end, validator with every
// capability, SPIR-V writer; prints the error or the panic per file.
fn main() {
    for path in std::env::args().skip(1) {
        let src = std::fs::read_to_string(&path).unwrap();
        let r = std::panic::catch_unwind(|| -> Result<usize, String> {
            let module = naga::front::wgsl::parse_str(&src).map_err(|e| e.emit_to_string(&src))?;
            let info = naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::all())
                .validate(&module)
                .map_err(|e| format!("{e:?}"))?;
            let words = naga::back::spv::write_vec(&module, &info, &Default::default(), None).map_err(|e| format!("{e:?}"))?;
            Ok(words.len())
        });
        match r {
            Ok(Ok(n)) => println!("OK    {path}: {n} SPIR-V words"),
            Ok(Err(e)) => println!("ERROR {path}: {}", e.lines().next().unwrap_or("")),
            Err(_) => println!("PANIC {path}"),
        }
    }
}

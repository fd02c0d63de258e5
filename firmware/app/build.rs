//! Puts the build configuration that the harness generated where the compiler
//! and linker read it: `config.rs` (board, model, arena size, input data) and,
//! on bare metal, `memory.x` (the board's memory map and stack budget).

use std::env;
use std::fs;
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-env-changed=HILMEM_BUILD_CONFIG");
    println!("cargo:rerun-if-env-changed=HILMEM_LINK_MAP");
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    let Some(dir) = env::var_os("HILMEM_BUILD_CONFIG") else {
        panic!(
            "HILMEM_BUILD_CONFIG is not set: the firmware is configured per board and model \
             by the harness; build it with `cargo xtask hil`"
        );
    };
    let dir = PathBuf::from(dir);
    let bare_metal = env::var("CARGO_CFG_TARGET_OS").unwrap() == "none";
    let files: &[&str] = if bare_metal { &["config.rs", "memory.x"] } else { &["config.rs"] };
    for name in files {
        let src = dir.join(name);
        println!("cargo:rerun-if-changed={}", src.display());
        fs::copy(&src, out.join(name)).unwrap_or_else(|e| panic!("cannot copy {}: {e}", src.display()));
    }
    if bare_metal {
        println!("cargo:rustc-link-search={}", out.display());
        println!("cargo:rustc-link-arg=-Tlink.x");
    }
    // The linker's map: where each input section of each object went, from
    // which the harness breaks the footprint down by component.
    if let Some(map) = env::var_os("HILMEM_LINK_MAP") {
        let map = map.to_str().expect("HILMEM_LINK_MAP is UTF-8");
        let arg = if bare_metal { format!("-Map={map}") } else { format!("-Wl,-Map={map}") };
        println!("cargo:rustc-link-arg-bins={arg}");
    }
}

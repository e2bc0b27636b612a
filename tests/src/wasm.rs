//! The wasm32 build of keyless-abi loaded in wasmtime: used by the wasm ≡ native differential
//! test and the side-by-side throughput bench.

#![allow(clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::process::Command;
use wasmtime::{Engine, Instance, Memory, Module, Store, TypedFunc};

/// The workspace root.
#[must_use]
pub fn workspace_root() -> PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("root")
        .to_path_buf()
}

/// The wasm32 build of keyless-abi: `KEYLESS_ABI_WASM`, else built here.
pub fn wasm_file() -> PathBuf {
    if let Some(p) = std::env::var_os("KEYLESS_ABI_WASM") {
        return PathBuf::from(p);
    }
    let root = workspace_root();
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args([
            "build",
            "--quiet",
            "--release",
            "-p",
            "keyless-abi",
            "--target",
            "wasm32-unknown-unknown",
        ])
        .current_dir(&root)
        .status()
        .expect("cargo");
    assert!(
        status.success(),
        "building keyless-abi for wasm32 failed (rustup target add wasm32-unknown-unknown)"
    );
    root.join("target/wasm32-unknown-unknown/release/keyless_abi.wasm")
}

/// One instance of the module.
#[allow(missing_debug_implementations)] // wasmtime handles have nothing useful to print
pub struct WasmCore {
    store: Store<()>,
    memory: Memory,
    alloc: TypedFunc<i32, i32>,
    free: TypedFunc<(i32, i32), ()>,
    call: TypedFunc<(i32, i32, i32), i64>,
    parse_fn: TypedFunc<(i32, i32), i64>,
}

impl WasmCore {
    /// Loads the module (it needs no imports).
    #[must_use]
    pub fn load() -> Self {
        // Built and compiled once per process; each caller gets its own instance (its own
        // memory), so tests on several threads share nothing but the compiled code.
        static COMPILED: std::sync::OnceLock<(Engine, Module)> = std::sync::OnceLock::new();
        let (engine, module) = COMPILED.get_or_init(|| {
            let engine = Engine::default();
            let module = Module::from_file(&engine, wasm_file()).expect("module");
            assert_eq!(
                module.imports().count(),
                0,
                "the core needs no host imports"
            );
            (engine, module)
        });
        let mut store = Store::new(engine, ());
        let instance = Instance::new(&mut store, module, &[]).expect("instance");
        let memory = instance.get_memory(&mut store, "memory").expect("memory");
        let alloc = instance
            .get_typed_func(&mut store, "keyless_alloc")
            .expect("alloc");
        let free = instance
            .get_typed_func(&mut store, "keyless_free")
            .expect("free");
        let call = instance
            .get_typed_func(&mut store, "keyless_call")
            .expect("call");
        let parse_fn = instance
            .get_typed_func(&mut store, "keyless_parse")
            .expect("parse");
        Self {
            store,
            memory,
            alloc,
            free,
            call,
            parse_fn,
        }
    }

    /// `call_json` of keyless-abi, inside the module.
    pub fn call_json(&mut self, op: u32, input: &str) -> String {
        let len = i32::try_from(input.len()).expect("small input");
        let ptr = self.alloc.call(&mut self.store, len).expect("alloc");
        self.memory
            .write(
                &mut self.store,
                usize::try_from(ptr).expect("ptr"),
                input.as_bytes(),
            )
            .expect("write");
        let packed = self
            .call
            .call(&mut self.store, (i32::try_from(op).expect("op"), ptr, len))
            .expect("call");
        #[allow(clippy::cast_sign_loss, clippy::cast_possible_truncation)]
        let (p, n) = (
            ((packed as u64) >> 32) as usize,
            (packed as u64 & 0xffff_ffff) as usize,
        );
        let mut out = vec![0u8; n];
        self.memory.read(&self.store, p, &mut out).expect("read");
        #[allow(clippy::cast_possible_truncation, clippy::cast_possible_wrap)]
        self.free
            .call(&mut self.store, (p as i32, n as i32))
            .expect("free answer");
        self.free
            .call(&mut self.store, (ptr, len))
            .expect("free input");
        String::from_utf8(out).expect("utf8")
    }
}

impl WasmCore {
    /// Copies `text` into the module's memory once; returns its pointer and length.
    pub fn put(&mut self, text: &str) -> (i32, i32) {
        let len = i32::try_from(text.len()).expect("small input");
        let ptr = self.alloc.call(&mut self.store, len).expect("alloc");
        self.memory
            .write(
                &mut self.store,
                usize::try_from(ptr).expect("ptr"),
                text.as_bytes(),
            )
            .expect("write");
        (ptr, len)
    }

    /// `keyless_parse` on text already in memory: `(commands << 32) | diagnostics`.
    pub fn parse(&mut self, at: (i32, i32)) -> u64 {
        #[allow(clippy::cast_sign_loss)]
        let v = self.parse_fn.call(&mut self.store, at).expect("parse") as u64;
        v
    }
}

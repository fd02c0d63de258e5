//! What a TFLM source tree is: where it is, its generation (which decides
//! the API the shim speaks and what the analyzer predicts), its sources and
//! flags. The firmware's build script includes the same file, so both sides
//! agree on what a tree is.

#![allow(dead_code)] // the build script uses all of it, the harness part

use std::fmt;
use std::path::{Path, PathBuf};
use std::{env, fs};

include!("../../../firmware/tflm-sys/tree.rs");

impl Generation {
    /// How records, reports and the analysis name it.
    pub fn name(self) -> &'static str {
        match self {
            Generation::Tfmicro2020 => "2020",
            Generation::Current => "current",
        }
    }

    /// The generation [`Generation::name`] names.
    pub fn named(name: &str) -> Option<Generation> {
        [Generation::Tfmicro2020, Generation::Current].into_iter().find(|g| g.name() == name)
    }
}

impl fmt::Display for Generation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

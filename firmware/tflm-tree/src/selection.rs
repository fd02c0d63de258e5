//! Which of a tree's kernel sources an image compiles: those its model's
//! operators register, and the helpers they reach.

use std::fs;
use std::path::{Path, PathBuf};

use crate::Tree;

/// The kernel sources an image needs: those of `tree` that define one of
/// `registrations` (`Register_CONV_2D`, ...), and the helpers among the
/// kernel sources (those that define none, like `conv_common.cc`) that
/// implement a header those include, directly or through other headers or
/// helpers (`conv.h`: its header is the one beside it under its own name,
/// or under its name without `_common`; a helper without one is always
/// compiled). TFLM's archive would leave the rest out of the link anyway;
/// not compiling them is what keeps a build on a new tree short, and a
/// helper wrongly left out is an undefined symbol at the link, never a
/// different image. A registration no kernel defines is an error, which
/// names the tree and counts the kernel sources its Makefile lists that it
/// lacks.
pub fn needed_kernels(tree: &Tree, registrations: &[String]) -> Result<Vec<PathBuf>, String> {
    let mut defined: Vec<String> = Vec::new();
    let mut needed = Vec::new();
    let mut helpers = Vec::new();
    for file in &tree.kernels {
        let text = fs::read_to_string(file).map_err(|e| format!("cannot read {}: {e}", file.display()))?;
        let defines = registrations_defined(&text);
        if defines.is_empty() {
            helpers.push(file.clone());
        } else if defines.iter().any(|r| registrations.contains(r)) {
            needed.push(file.clone());
        }
        defined.extend(defines);
    }
    let missing: Vec<&str> = registrations.iter().filter(|r| !defined.contains(r)).map(String::as_str).collect();
    if !missing.is_empty() {
        let absent = match tree.absent.len() {
            0 => String::new(),
            n => format!(" (its Makefile lists {n} kernel sources the tree does not hold)"),
        };
        return Err(format!(
            "{}: no kernel source of the TFLM tree defines {}{absent}",
            tree.root.display(),
            missing.join(", ")
        ));
    }
    let mut pending: Vec<(PathBuf, Option<PathBuf>)> = helpers
        .into_iter()
        .map(|helper| {
            let own = own_header(&helper);
            (helper, own)
        })
        .collect();
    let mut included = tree.includes(&needed, true).files;
    loop {
        let (now, later): (Vec<_>, Vec<_>) =
            pending.into_iter().partition(|(_, own)| own.as_ref().is_none_or(|h| included.contains(h)));
        if now.is_empty() {
            return Ok(needed);
        }
        let now: Vec<PathBuf> = now.into_iter().map(|(helper, _)| helper).collect();
        included.extend(tree.includes(&now, true).files);
        needed.extend(now);
        pending = later;
    }
}

/// The header a kernel helper implements: the one beside it under its
/// own name, or under its name without `_common` (`conv_common.cc`
/// implements `conv.h`; not `reference/conv.h`, which it also includes).
fn own_header(helper: &Path) -> Option<PathBuf> {
    let stem = helper.file_stem()?.to_str()?;
    let names = [stem, stem.strip_suffix("_common").unwrap_or(stem)];
    names.iter().map(|name| helper.with_file_name(format!("{name}.h"))).find(|h| h.is_file())
}

/// The `Register_X` functions a source file defines (`Register_X() {`).
fn registrations_defined(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (at, _) in text.match_indices("Register_") {
        let rest = &text[at..];
        let name_len = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
        let after = rest[name_len..].trim_start();
        let Some(after) = after.strip_prefix('(') else { continue };
        let Some(after) = after.trim_start().strip_prefix(')') else { continue };
        let name = &rest[..name_len];
        if after.trim_start().starts_with('{') && !found.iter().any(|f| f == name) {
            found.push(name.to_owned());
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::*;
    use crate::{Api, Flags, Generation, Kernels};

    /// Of the kernel sources, an image compiles those that register its
    /// operators and the helpers that implement a header they reach,
    /// directly, through other headers or through another such helper; a
    /// helper whose header cannot be told is compiled.
    #[test]
    fn only_the_helpers_the_models_kernels_reach_are_compiled() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let kernels = "tensorflow/lite/micro/kernels";
        let reference = "tensorflow/lite/kernels/internal/reference/pooling.h";
        let include = |header: &str| format!("#include \"{kernels}/{header}\"\n");
        let register = |op: &str| format!("TFLMRegistration Register_{op}() {{ return {{}}; }}\n");
        let files = [
            ("conv.cc", include("conv.h") + &include("kernel_util.h") + &register("CONV_2D")),
            ("conv.h", include("padding.h")),
            ("padding.h", String::new()),
            ("conv_common.cc", include("conv.h") + &include("tensor_helper.h")),
            ("tensor_helper.h", String::new()),
            ("tensor_helper.cc", include("tensor_helper.h")),
            ("kernel_util.h", String::new()),
            ("kernel_util.cc", include("kernel_util.h")),
            ("depthwise_conv.h", String::new()),
            ("depthwise_conv.cc", include("depthwise_conv.h") + &include("conv.h") + &register("DEPTHWISE_CONV_2D")),
            ("depthwise_conv_common.cc", include("depthwise_conv.h") + &include("kernel_util.h")),
            ("lstm_eval.h", String::new()),
            ("lstm_eval_common.cc", include("lstm_eval.h") + &include("kernel_util.h")),
            ("no_header.cc", include("kernel_util.h")),
            // Its header is the one beside it, not the reference kernel's.
            ("pooling.h", String::new()),
            ("pooling.cc", include("pooling.h") + &register("AVERAGE_POOL_2D")),
            ("pooling_common.cc", format!("#include \"{reference}\"\n") + &include("pooling.h")),
        ];
        for (name, text) in &files {
            write(root, &format!("{kernels}/{name}"), text);
        }
        write(root, reference, "");
        let tree = Tree {
            root: root.to_owned(),
            generation: Generation::Current,
            api: Api::default(),
            third_party: root.join("third_party"),
            core: Vec::new(),
            kernels: files
                .iter()
                .filter(|(n, _)| n.ends_with(".cc"))
                .map(|(n, _)| root.join(kernels).join(n))
                .collect(),
            absent: Vec::new(),
            flags: Flags { c: Vec::new(), cxx: Vec::new() },
            kernels_set: Kernels::Reference,
            third_party_kernels: Vec::new(),
            kernel_includes: Vec::new(),
            cpu: Vec::new(),
        };
        let needed = |ops: &[&str]| {
            let registrations: Vec<String> = ops.iter().map(|op| format!("Register_{op}")).collect();
            let found = needed_kernels(&tree, &registrations).unwrap();
            let mut names: Vec<String> =
                found.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
            names.sort();
            names
        };
        assert_eq!(
            needed(&["CONV_2D"]),
            ["conv.cc", "conv_common.cc", "kernel_util.cc", "no_header.cc", "tensor_helper.cc"]
        );
        assert_eq!(
            needed(&["DEPTHWISE_CONV_2D"]),
            [
                "conv_common.cc",
                "depthwise_conv.cc",
                "depthwise_conv_common.cc",
                "kernel_util.cc",
                "no_header.cc",
                "tensor_helper.cc"
            ]
        );
        assert_eq!(needed(&["AVERAGE_POOL_2D"]), ["kernel_util.cc", "no_header.cc", "pooling.cc", "pooling_common.cc"]);
        let unknown = needed_kernels(&tree, &["Register_ADD".to_owned()]).unwrap_err();
        assert!(unknown.contains("defines Register_ADD"), "{unknown}");
    }
}

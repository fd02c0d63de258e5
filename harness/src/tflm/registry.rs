//! What a TFLM registers ([`Operators`]): for the bundled TFLM, from the
//! tables in [`bundled`]; for a current TFLM tree, read from its schema and
//! its `MicroMutableOpResolver`. What a model needs of it is
//! `model::resolver`.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::tflm::bundled;

/// The builtin operators a TFLM registers, by operator code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Operators {
    pub by_code: BTreeMap<i32, Operator>,
}

/// One builtin operator a TFLM registers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Operator {
    pub name: String,
    /// The versions it accepts; None: any.
    pub versions: Option<(i32, i32)>,
    /// The current `MicroMutableOpResolver` method that adds it; None for
    /// 2020's resolver, which adds a registration per version.
    pub method: Option<String>,
    /// The function its kernel defines to register it (`Register_CONV_2D`).
    pub kernel: String,
}

impl Operators {
    /// The bundled TFLM's `AllOpsResolver`: [`bundled::REGISTERED`].
    pub fn bundled() -> Operators {
        let by_code = bundled::REGISTERED
            .iter()
            .map(|&(code, lo, hi)| {
                let name = bundled::builtin_name(code);
                let kernel = format!("Register_{name}");
                (code, Operator { name, versions: Some((lo, hi)), method: None, kernel })
            })
            .collect();
        Operators { by_code }
    }

    /// A current TFLM tree's `MicroMutableOpResolver`: each `AddX` method
    /// that adds a builtin, the kernel registration it adds, and the builtin
    /// codes of the tree's schema.
    pub fn of_tree(root: &Path) -> Result<Operators, String> {
        let header = root.join("tensorflow/lite/micro/micro_mutable_op_resolver.h");
        let text = std::fs::read_to_string(&header).map_err(|e| format!("{}: {e}", header.display()))?;
        let codes = schema_codes(root)?;
        let identifier =
            |text: &str| -> String { text.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect() };
        let mut by_code = BTreeMap::new();
        for method in text.split("TfLiteStatus Add").skip(1) {
            let name = identifier(method);
            let body = method.split("TfLiteStatus ").next().unwrap_or_default();
            let Some(op) = body.split("AddBuiltin(BuiltinOperator_").nth(1).map(identifier) else { continue };
            if name.is_empty() || name == "Builtin" {
                continue;
            }
            let code = *codes.get(&op).ok_or_else(|| format!("{}: no operator code for {op}", header.display()))?;
            let kernel = body
                .split("Register_")
                .nth(1)
                .map(|rest| format!("Register_{}", identifier(rest)))
                .ok_or_else(|| format!("{}: Add{name} names no `Register_` function", header.display()))?;
            by_code.insert(code, Operator { name: op, versions: None, method: Some(format!("Add{name}")), kernel });
        }
        if by_code.is_empty() {
            return Err(format!("{}: no `AddX` methods that add a builtin operator", header.display()));
        }
        Ok(Operators { by_code })
    }
}

/// `BuiltinOperator_NAME = N` of the tree's schema.
fn schema_codes(root: &Path) -> Result<BTreeMap<String, i32>, String> {
    let schema = root.join("tensorflow/lite/schema/schema_generated.h");
    let text = std::fs::read_to_string(&schema).map_err(|e| format!("{}: {e}", schema.display()))?;
    let enum_body = text
        .split("enum BuiltinOperator")
        .nth(1)
        .and_then(|rest| rest.split('}').next())
        .ok_or_else(|| format!("{}: no `enum BuiltinOperator`", schema.display()))?;
    let codes: BTreeMap<String, i32> = enum_body
        .lines()
        .filter_map(|line| {
            let (name, value) = line.trim().trim_end_matches(',').split_once(" = ")?;
            Some((name.strip_prefix("BuiltinOperator_")?.to_owned(), value.trim().parse().ok()?))
        })
        .filter(|(name, _)| name != "MIN" && name != "MAX")
        .collect();
    if codes.is_empty() {
        return Err(format!("{}: `enum BuiltinOperator` lists no operators", schema.display()));
    }
    Ok(codes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A current tree's resolver, in the shape its header has: methods that
    /// add a builtin are found with their operator; custom ones are not.
    #[test]
    fn a_current_resolver_is_read_from_its_header_and_schema() {
        let root = tempfile::tempdir().unwrap();
        let write = |path: &str, text: &str| {
            let file = root.path().join(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, text).unwrap();
        };
        write(
            "tensorflow/lite/schema/schema_generated.h",
            "enum BuiltinOperator : int32_t {\n  BuiltinOperator_ADD = 0,\n  BuiltinOperator_CONV_2D = 3,\n  \
             BuiltinOperator_SHAPE = 77,\n  BuiltinOperator_MIN = BuiltinOperator_ADD,\n};\n",
        );
        write(
            "tensorflow/lite/micro/micro_mutable_op_resolver.h",
            "  TfLiteStatus AddBuiltin(tflite::BuiltinOperator op, const TFLMRegistration& registration) {}\n\
             \x20 TfLiteStatus AddCircularBuffer() {\n    return AddCustom(\"CIRCULAR_BUFFER\", x);\n  }\n\
             \x20 TfLiteStatus AddConv2D(\n      const TFLMRegistration& registration = Register_CONV_2D()) {\n\
             \x20   return AddBuiltin(BuiltinOperator_CONV_2D, registration, ParseConv2D);\n  }\n\
             \x20 TfLiteStatus AddShape() {\n    return AddBuiltin(BuiltinOperator_SHAPE, Register_SHAPE(), ParseShape);\n  }\n",
        );
        let ops = Operators::of_tree(root.path()).unwrap();
        let names: Vec<(&str, &str)> = ops.by_code.values().map(|o| (o.name.as_str(), o.kernel.as_str())).collect();
        assert_eq!(names, [("CONV_2D", "Register_CONV_2D"), ("SHAPE", "Register_SHAPE")]);
    }

    #[test]
    fn the_bundled_tflm_registers_its_tables_operators_by_name() {
        let ops = Operators::bundled();
        assert_eq!(ops.by_code.len(), bundled::REGISTERED.len());
        let conv = &ops.by_code[&3];
        assert_eq!(
            (conv.name.as_str(), conv.kernel.as_str(), conv.method.as_deref()),
            ("CONV_2D", "Register_CONV_2D", None)
        );
    }
}

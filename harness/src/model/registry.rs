//! What a TFLM registers ([`Operators`]), and the op resolver a firmware
//! generates from it with exactly a model's operators. For the bundled TFLM,
//! from the tables in [`tflm_ops`]; for a current TFLM tree, read from its
//! schema and its `MicroMutableOpResolver`.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::model::{tflite, tflm_ops};

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
    /// The bundled TFLM's `AllOpsResolver`: [`tflm_ops::REGISTERED`].
    pub fn bundled() -> Operators {
        let by_code = tflm_ops::REGISTERED
            .iter()
            .map(|&(code, lo, hi)| {
                let name = tflite::builtin_name(code);
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

    /// The model's operators this runtime does not register, as `NAME vN`
    /// or ``custom op `X` ``.
    pub fn missing(&self, model: &tflite::Model) -> Vec<String> {
        let mut missing = Vec::new();
        for op in &model.operator_codes {
            let entry = self.by_code.get(&op.builtin);
            let version = op.version;
            let known = op.custom.is_none()
                && entry.is_some_and(|o| o.versions.is_none_or(|(lo, hi)| (lo..=hi).contains(&version)));
            let text = match (&op.custom, entry) {
                (Some(custom), _) => format!("custom op `{custom}`"),
                (None, Some(o)) => format!("{} v{version}", o.name),
                (None, None) => format!("{} v{version}", tflite::builtin_name(op.builtin)),
            };
            if !known && !missing.contains(&text) {
                missing.push(text);
            }
        }
        missing
    }

    /// `hilmem_ops.h` for an image that runs `models`: the resolver's size
    /// and the calls that register exactly their operators (each version
    /// they use, in 2020, where the resolver matches versions). The models
    /// must have passed [`Operators::missing`].
    pub fn resolver_header(&self, models: &[&tflite::Model]) -> String {
        let mut calls: Vec<String> = Vec::new();
        for (op, version) in self.used(models) {
            let call = match &op.method {
                None => format!(
                    "r.AddBuiltin(tflite::BuiltinOperator_{}, tflite::ops::micro::{}(), {version});",
                    op.name, op.kernel
                ),
                Some(method) => format!("r.{method}();"),
            };
            if !calls.contains(&call) {
                calls.push(call);
            }
        }
        let mut out = format!(
            "// Generated by hilmem: the op resolver with exactly the model's operators.\n\
             #define HM_OP_COUNT {}\n",
            calls.len().max(1)
        );
        // A model with resource handles needs the interpreter's resource
        // variables, which the firmware then makes.
        if models.iter().flat_map(|m| &m.operator_codes).any(|c| c.custom.is_none() && c.builtin == tflite::VAR_HANDLE)
        {
            out.push_str("#define HM_RESOURCE_VARIABLES\n");
        }
        out.push_str("template <class R>\nvoid hm_register_ops(R& r) {\n");
        for call in calls {
            out.push_str(&format!("  {call}\n"));
        }
        out.push_str("}\n");
        out
    }

    /// The registration functions of the kernels `models` use, one per
    /// line: the firmware build compiles those of TFLM's kernels and no
    /// others.
    pub fn kernel_list(&self, models: &[&tflite::Model]) -> String {
        let kernels: std::collections::BTreeSet<&str> = self.used(models).map(|(op, _)| op.kernel.as_str()).collect();
        kernels.into_iter().map(|k| format!("{k}\n")).collect()
    }

    /// Each builtin operator `models` use, with the version.
    fn used<'a>(&'a self, models: &'a [&tflite::Model]) -> impl Iterator<Item = (&'a Operator, i32)> + 'a {
        models.iter().flat_map(|m| &m.operator_codes).map(|code| (&self.by_code[&code.builtin], code.version))
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
    use crate::model::tflite::{Model, OperatorCode};

    fn with_ops(operator_codes: Vec<OperatorCode>) -> Model {
        Model {
            version: 3,
            description: None,
            metadata: vec![],
            operator_codes,
            subgraphs: vec![],
            buffers: vec![0],
            offline_plan: None,
        }
    }

    #[test]
    fn the_example_models_need_nothing_the_bundled_tflm_lacks() {
        let dir = crate::Workspace::from_source().root().join("firmware/models");
        for name in
            ["hello_world.tflite", "micro_speech.tflite", "magic_wand.tflite", "person_detection_grayscale.tflite"]
        {
            let model = tflite::read(&std::fs::read(dir.join(name)).unwrap()).unwrap();
            let missing = Operators::bundled().missing(&model);
            assert!(missing.is_empty(), "{name}: {missing:?}");
        }
    }

    #[test]
    fn an_operator_the_bundled_tflm_lacks_is_named_with_its_version() {
        let model = with_ops(vec![
            OperatorCode { builtin: 9, custom: None, version: 1 },
            OperatorCode { builtin: 77, custom: None, version: 1 },
            OperatorCode { builtin: 9, custom: None, version: 9 },
            OperatorCode { builtin: 32, custom: Some("TFLite_Detection_PostProcess".into()), version: 1 },
            OperatorCode { builtin: 150, custom: None, version: 1 },
        ]);
        assert_eq!(
            Operators::bundled().missing(&model),
            ["SHAPE v1", "FULLY_CONNECTED v9", "custom op `TFLite_Detection_PostProcess`", "builtin 150 v1"]
        );
    }

    #[test]
    fn the_bundled_resolver_registers_each_version_the_model_uses_once() {
        let model = with_ops(vec![
            OperatorCode { builtin: 9, custom: None, version: 1 },
            OperatorCode { builtin: 3, custom: None, version: 2 },
            OperatorCode { builtin: 9, custom: None, version: 1 },
        ]);
        let header = Operators::bundled().resolver_header(&[&model]);
        assert!(header.contains("#define HM_OP_COUNT 2\n"), "{header}");
        assert!(header.contains(
            "r.AddBuiltin(tflite::BuiltinOperator_FULLY_CONNECTED, tflite::ops::micro::Register_FULLY_CONNECTED(), 1);"
        ));
        assert!(header
            .contains("r.AddBuiltin(tflite::BuiltinOperator_CONV_2D, tflite::ops::micro::Register_CONV_2D(), 2);"));
        assert_eq!(Operators::bundled().kernel_list(&[&model]), "Register_CONV_2D\nRegister_FULLY_CONNECTED\n");
    }

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
        let model = with_ops(vec![
            OperatorCode { builtin: 77, custom: None, version: 1 },
            OperatorCode { builtin: 3, custom: None, version: 6 },
        ]);
        assert!(ops.missing(&model).is_empty(), "any version: the current resolver does not match versions");
        let header = ops.resolver_header(&[&model]);
        assert!(
            header.contains("#define HM_OP_COUNT 2\n") && header.contains("r.AddShape();\n  r.AddConv2D();"),
            "{header}"
        );
        assert_eq!(ops.kernel_list(&[&model]), "Register_CONV_2D\nRegister_SHAPE\n");
        let add = with_ops(vec![OperatorCode { builtin: 0, custom: None, version: 1 }]);
        assert_eq!(ops.missing(&add), ["ADD v1"]);
    }

    #[test]
    fn a_model_with_resource_handles_has_the_firmware_make_resource_variables() {
        let op = |name: &str, method: &str| Operator {
            name: name.into(),
            versions: None,
            method: Some(method.into()),
            kernel: format!("Register_{name}"),
        };
        let ops = Operators {
            by_code: BTreeMap::from([
                (tflite::VAR_HANDLE, op("VAR_HANDLE", "AddVarHandle")),
                (77, op("SHAPE", "AddShape")),
            ]),
        };
        let header =
            |builtin| ops.resolver_header(&[&with_ops(vec![OperatorCode { builtin, custom: None, version: 1 }])]);
        assert!(header(tflite::VAR_HANDLE).contains("#define HM_RESOURCE_VARIABLES\n"));
        assert!(!header(77).contains("HM_RESOURCE_VARIABLES"));
    }
}

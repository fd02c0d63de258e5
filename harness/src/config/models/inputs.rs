//! An input's bytes as the model's input tensor takes them: a file as it
//! is, or values quantized for the tensor.

use crate::model::tflite;

use super::{Format, InputData, InputSpec, ModelsError};

impl InputSpec {
    /// The bytes to copy into `model`'s (first) input tensor: a file as it
    /// is (or converted from big-endian floats), values as float32 or,
    /// for a quantized tensor, quantized with its scale and zero point.
    /// They must fill the tensor exactly.
    pub(super) fn bytes(&self, model_name: &str, model: &tflite::Model) -> Result<Vec<u8>, ModelsError> {
        let invalid = |why: String| ModelsError::Input { model: model_name.to_owned(), input: self.name.clone(), why };
        let tensor = model
            .subgraphs
            .first()
            .and_then(|g| g.inputs.first().and_then(|&i| g.tensors.get(usize::try_from(i).ok()?)))
            .ok_or_else(|| invalid("the model has no input tensor".into()))?;
        let bytes = match &self.data {
            InputData::Values(values) => quantized(values, tensor).map_err(invalid)?,
            InputData::File { path, format } => {
                let bytes = std::fs::read(path).map_err(|source| ModelsError::Read {
                    model: model_name.to_owned(),
                    path: path.clone(),
                    source,
                })?;
                match format {
                    Format::Raw => bytes,
                    Format::F32Be if bytes.len() % 4 != 0 => {
                        return Err(invalid(format!(
                            "{}: {} bytes is not a whole number of f32 values",
                            path.display(),
                            bytes.len()
                        )))
                    }
                    Format::F32Be => bytes
                        .chunks_exact(4)
                        .flat_map(|c| f32::from_be_bytes(c.try_into().unwrap()).to_le_bytes())
                        .collect(),
                }
            }
        };
        let takes = tensor.bytes();
        if takes != Some(bytes.len()) {
            return Err(invalid(format!(
                "{} bytes, but the input tensor `{}` ({} {:?}) takes {}",
                bytes.len(),
                tensor.name,
                tflite::type_name(tensor.kind),
                tensor.shape,
                takes.map_or_else(|| "an unknown size".into(), |n| n.to_string())
            )));
        }
        Ok(bytes)
    }
}

/// `values` as `tensor`'s elements: float32 as they are; bool as 1 for
/// any value but 0; int32 as whole numbers (shapes, indices); int8, uint8
/// and int16 quantized as TFLite's QUANTIZE operator does,
/// `round(v / scale) + zero_point` clamped to the type's range.
fn quantized(values: &[f32], tensor: &tflite::Tensor) -> Result<Vec<u8>, String> {
    let (range, width) = match tflite::type_name(tensor.kind) {
        "float32" => return Ok(values.iter().flat_map(|v| v.to_le_bytes()).collect()),
        "bool" => return Ok(values.iter().map(|&v| u8::from(v != 0.0)).collect()),
        "int32" => {
            if let Some(v) = values.iter().find(|v| v.fract() != 0.0 || v.abs() > 16_777_216.0) {
                return Err(format!("{v} is not a whole number an int32 input tensor takes exactly"));
            }
            return Ok(values.iter().flat_map(|&v| (v as i32).to_le_bytes()).collect());
        }
        "int8" => ((-128.0, 127.0), 1),
        "uint8" => ((0.0, 255.0), 1),
        "int16" => ((-32768.0, 32767.0), 2),
        other => {
            return Err(format!("`values` cannot fill an input tensor of type {other}; give a `file` of its bytes"))
        }
    };
    let q = &tensor.quantization;
    let (Some(&scale), Some(&zero)) = (q.scale.first(), q.zero_point.first()) else {
        return Err(format!(
            "the {} input tensor `{}` has no quantization to apply to `values`",
            tflite::type_name(tensor.kind),
            tensor.name
        ));
    };
    Ok(values
        .iter()
        .flat_map(|v| {
            let level = ((v / scale).round() + zero as f32).clamp(range.0, range.1) as i32;
            level.to_le_bytes().into_iter().take(width)
        })
        .collect())
}

//! A model's resource variables, as TFLM numbers them.

use std::collections::BTreeMap;

use crate::model::tflite::{Model, VAR_HANDLE};

use super::ASSIGN_VARIABLE;

/// A model's resource variables as TFLM's `MicroResourceVariables` numbers
/// them: the variable each handle tensor (a VAR_HANDLE's output) names,
/// handles of the same container and shared name being one variable (a
/// handle without a container names any container's), and how many handles
/// there are (hilmem's firmware makes room for a variable per handle).
pub(super) struct Variables {
    pub(super) of_handle: BTreeMap<i32, usize>,
    pub(super) handles: usize,
}

/// The resource variables of `model`'s first subgraph, or why TFLM's
/// allocation for them cannot be told from the model file.
pub(super) fn variables(model: &Model) -> Result<Variables, String> {
    let mut named: Vec<[Option<String>; 2]> = Vec::new();
    let mut of_handle = BTreeMap::new();
    let mut handles = 0;
    for (step, op) in model.subgraphs.first().map_or(&[][..], |sg| &sg.operators).iter().enumerate() {
        let code = model.operator_codes.get(op.opcode_index as usize).filter(|c| c.custom.is_none());
        match code.map(|c| c.builtin) {
            Some(VAR_HANDLE) => {
                handles += 1;
                let [container, shared_name] = op.variable.clone().unwrap_or_default();
                if shared_name.is_none() {
                    return Err(format!("the VAR_HANDLE at step {step} has no shared name, which TFLM compares"));
                }
                let same = |[c, s]: &[Option<String>; 2]| (container.is_none() || container == *c) && shared_name == *s;
                let id = named.iter().position(same).unwrap_or_else(|| {
                    named.push([container, shared_name]);
                    named.len() - 1
                });
                of_handle.extend(op.outputs.iter().map(|&o| (o, id)));
            }
            // Its Prepare allocates the variable only when the handle's id
            // is known by then: a VAR_HANDLE before it has set it.
            Some(ASSIGN_VARIABLE) => {
                let handle = op.inputs.first().copied().unwrap_or(-1);
                if !of_handle.contains_key(&handle) {
                    return Err(format!(
                        "the ASSIGN_VARIABLE at step {step} takes its resource from tensor {handle}, which no \
                         VAR_HANDLE before it gives"
                    ));
                }
            }
            _ => {}
        }
    }
    Ok(Variables { of_handle, handles })
}

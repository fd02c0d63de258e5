//! The analyzer's tables: a model's plan and arena, a set's, the fit in
//! a board, and the operators each TFLM registers.

use tabled::builder::Builder;
use tabled::settings::object::Columns;
use tabled::settings::{Alignment, Style};

use crate::model::analysis::{Analysis, SetAnalysis, Sharing};
use crate::model::tail::cmsis_nn::{self, KernelPath};
use crate::model::tail::current;
use crate::tflm::registry::Operators;
use crate::tflm::tree::Generation;

/// A model's memory plan: every planned tensor with its lifetime and greedy
/// offset, then linear, greedy and the lower bound compared.
pub fn analysis(a: &Analysis) -> String {
    let mut builder = Builder::default();
    builder.push_record([
        "tensor",
        "name",
        "type",
        "shape",
        "bytes (aligned)",
        "steps",
        "greedy offset",
        "hilmem offset",
    ]);
    for t in &a.planned {
        builder.push_record([
            t.index.to_string(),
            t.name.clone(),
            t.kind.to_owned(),
            format!("{:?}", t.shape),
            t.bytes.to_string(),
            format!("{}..={}", t.first_step, t.last_step),
            t.greedy_offset.to_string(),
            t.hilmem_offset.to_string(),
        ]);
    }
    let mut table = builder.build();
    table
        .with(Style::sharp())
        .modify(Columns::new(4..5), Alignment::right())
        .modify(Columns::new(6..8), Alignment::right());
    let live: Vec<String> = a.live_at_peak.iter().map(usize::to_string).collect();
    let mut out = String::new();
    if let Some(description) = &a.description {
        out.push_str(&format!("{}: {description}\n", a.model));
    }
    if !a.metadata.is_empty() {
        out.push_str(&format!("{}: metadata {}\n", a.model, a.metadata.join(", ")));
    }
    out += &format!(
        "{}: {} operators ({}), {} tensors, {} planned\n{table}\n\
         arena head, linear (no reuse):   {} bytes\n\
         arena head, TFLM's greedy plan:  {} bytes ({} bytes, {:.1}% less than linear)\n\
         arena head, hilmem's plan:       {} bytes ({} bytes less than greedy; `planner = \"offline\"` writes it into the model)\n\
         arena head, lower bound:         {} bytes (alive at once at step {}: tensors {})",
        a.model,
        a.operator_count,
        a.operators.join(", "),
        a.tensor_count,
        a.planned.len(),
        a.linear_bytes,
        a.greedy_bytes,
        a.linear_bytes - a.greedy_bytes,
        a.saved_percent(),
        a.hilmem_bytes,
        a.greedy_bytes - a.hilmem_bytes,
        a.lower_bound_bytes,
        a.peak_step,
        live.join(", "),
    );
    if let Some(bytes) = a.model_plan_bytes {
        out.push_str(&format!("\narena head, the model's own plan: {bytes} bytes (the offline plan in its metadata)"));
    }
    let figure = |bytes: Option<usize>| bytes.map_or("-".to_owned(), |b| format!("{b} bytes"));
    out.push_str(&format!(
        "\narena tail (persistent):         {}\n\
         arena used, predicted:           {} (head + tail: TFLM's arena_used_bytes() on 32-bit Arm, {} TFLM, {} planner)\n\
         least arena TFLM accepts:        {}",
        figure(a.tail_bytes),
        figure(a.predicted_arena_bytes),
        a.tflm,
        a.planner,
        match (a.predicted_least_arena_bytes, &a.least_arena_set_by) {
            (Some(bytes), Some(set_by)) => format!("{bytes} bytes (set by {set_by})"),
            (bytes, _) => figure(bytes),
        }
    ));
    for caveat in &a.caveats {
        out.push_str(&format!("\nnote: {caveat}"));
    }
    out
}

/// A resident set's arena both ways, model by model in load order.
pub fn set_analysis(name: &str, sharing: Sharing, s: &SetAnalysis) -> String {
    let figure = |bytes: Option<usize>| bytes.map_or("-".to_owned(), |b| b.to_string());
    let mut builder = Builder::default();
    builder.push_record(["model", "arena alone (separate)", "added to a shared arena"]);
    for (i, model) in s.models.iter().enumerate() {
        builder.push_record([
            model.clone(),
            s.separate_parts[i].to_string(),
            figure(s.shared_parts.as_ref().map(|p| p[i])),
        ]);
    }
    builder.push_record(["set".to_owned(), s.separate_bytes.to_string(), figure(s.shared_bytes)]);
    let mut table = builder.build();
    table.with(Style::sharp()).modify(Columns::new(1..3), Alignment::right());
    let layout = match sharing {
        Sharing::Separate => "an arena per model",
        Sharing::Shared => "one shared arena",
    };
    let saving = match s.shared_bytes {
        Some(shared) => format!(
            "sharing saves {} bytes ({:.1}% of separate)",
            s.separate_bytes - shared,
            (s.separate_bytes - shared) as f64 * 100.0 / s.separate_bytes as f64
        ),
        None => "only today's TFLM can share an arena".to_owned(),
    };
    format!("set `{name}` ({layout}), models in load order:\n{table}\n{saving}")
}

/// How the arena fits a board: the suggestion against the budget and RAM.
pub fn fit(f: &crate::config::fit::Fit) -> String {
    let verdict = |room: usize| {
        if f.suggested_arena_bytes <= room {
            format!("fits, {} bytes spare", room - f.suggested_arena_bytes)
        } else {
            format!("DOES NOT FIT, {} bytes short", f.suggested_arena_bytes - room)
        }
    };
    format!(
        "on {}: suggested arena {} bytes (least {} + {}% safety margin, in 16-byte steps)\n  \
         the budget's tensor arena, {} bytes: {}\n  \
         region {} ({} bytes{}): {}",
        f.board,
        f.suggested_arena_bytes,
        f.predicted_least_arena_bytes,
        f.safety_margin_percent,
        f.budget_arena_bytes,
        verdict(f.budget_arena_bytes),
        f.region,
        f.region_bytes,
        if f.region == "RAM" { " after the stack" } else { "" },
        verdict(f.region_bytes),
    )
}

/// Which operators the analyzer predicts the arena of, per TFLM generation,
/// as a Markdown table with its notes: every operator the bundled 2020
/// TFLM's `AllOpsResolver` registers (`bundled`) or today's
/// `MicroMutableOpResolver` does (`current`, read from a checkout), the
/// latter with reference kernels and with CMSIS-NN's; and the 2023
/// generation's, whose resolver registers today's operators but those of
/// `current::ABSENT_2023`.
pub fn operator_coverage(bundled: &Operators, current: &Operators) -> String {
    let mut notes: Vec<String> = Vec::new();
    let mut note = |why: &str| -> String {
        let n = notes.iter().position(|w| w == why).unwrap_or_else(|| {
            notes.push(why.to_owned());
            notes.len() - 1
        });
        format!("no ({})", n + 1)
    };
    let mut rows: Vec<(String, i32)> =
        bundled.by_code.iter().chain(&current.by_code).map(|(&code, op)| (op.name.clone(), code)).collect();
    rows.sort();
    rows.dedup();
    let mut text = String::from(
        "| operator | 2020 (bundled) | 2023, reference kernels | current, reference kernels | current, CMSIS-NN | current, least arena |\n\
         |---|---|---|---|---|---|\n",
    );
    let paths = [cmsis_nn::Path::Scalar, cmsis_nn::Path::Dsp, cmsis_nn::Path::Mve];
    let not_registered = || "not registered".to_owned();
    for (name, code) in rows {
        let old = if bundled.by_code.contains_key(&code) { "yes" } else { "not registered" };
        let mut reference = |tflm: Generation| {
            let why = current::not_predicted_operators(tflm).iter().find(|(n, _)| *n == name).map(|(_, why)| *why);
            match (current::knows(code, KernelPath::Reference, tflm), why) {
                (true, _) => "yes".to_owned(),
                (false, Some(why)) => note(why),
                (false, None) => note("not in the prediction's lists"),
            }
        };
        let registered = current.by_code.contains_key(&code);
        let of_2023 = match registered && !current::ABSENT_2023.contains(&code) {
            true => reference(Generation::Tflm2023),
            false => not_registered(),
        };
        let (today, cmsis, least) = if !registered {
            (not_registered(), not_registered(), not_registered())
        } else {
            let today = reference(Generation::Current);
            let cmsis = if !cmsis_nn::SPECIALIZED.contains(&code) {
                today.clone()
            } else if paths.iter().all(|&p| current::knows(code, KernelPath::CmsisNn(p), Generation::Current)) {
                "yes (CMSIS-NN's kernel)".to_owned()
            } else {
                note("what CMSIS-NN's kernel allocates is not in the table yet")
            };
            let least = if today != "yes" {
                today.clone()
            } else if current::prepare_read(code, KernelPath::Reference, Generation::Current) {
                "yes".to_owned()
            } else {
                note("the temporaries its Prepare takes are not in the table yet")
            };
            (today, cmsis, least)
        };
        text += &format!("| {name} | {old} | {of_2023} | {today} | {cmsis} | {least} |\n");
    }
    text.push('\n');
    for (i, why) in notes.iter().enumerate() {
        text += &format!("({}) {why}.\n", i + 1);
    }
    text
}

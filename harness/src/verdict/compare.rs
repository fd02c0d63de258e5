//! Measurements against baselines: a verdict per metric, under the
//! tolerances of `baselines/policy.toml`.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::image::footprint::{moved, Footprint};
use crate::run::results::Results;
use crate::strict_toml::{self, TomlError};
use crate::verdict::baseline::{is_baselined, list, BaselineError, BaselineFile, Source};
use hilmem_protocol::metric;

/// How much a noisy metric may move either way before it counts: more is a
/// regression, less an improvement. With both limits, both must hold; with
/// none, any change counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tolerance {
    pub bytes: Option<u64>,
    pub percent: Option<u64>,
}

impl Tolerance {
    fn allows(&self, baseline: i64, growth: i64) -> bool {
        if self.bytes.is_none() && self.percent.is_none() {
            return false;
        }
        let by_bytes = self.bytes.is_none_or(|b| growth as u64 <= b);
        let by_percent = self.percent.is_none_or(|p| growth as u128 * 100 <= p as u128 * baseline.max(0) as u128);
        by_bytes && by_percent
    }
}

/// Tolerances per metric, with per-board overrides.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    #[serde(default)]
    pub tolerance: BTreeMap<String, Tolerance>,
    #[serde(default)]
    pub board: BTreeMap<String, BoardPolicy>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BoardPolicy {
    #[serde(default)]
    pub tolerance: BTreeMap<String, Tolerance>,
}

impl Policy {
    /// `policy.toml` in the baselines directory; exact everywhere without it.
    pub fn load(dir: &Path) -> Result<Policy, TomlError> {
        let file = dir.join("policy.toml");
        if !file.exists() {
            return Ok(Policy::default());
        }
        strict_toml::read(&file)
    }

    pub fn tolerance(&self, board: &str, metric: &str) -> Tolerance {
        self.board
            .get(board)
            .and_then(|b| b.tolerance.get(metric))
            .or_else(|| self.tolerance.get(metric))
            .copied()
            .unwrap_or_default()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    Unchanged,
    WithinTolerance,
    Regressed,
    Improved,
    /// Measured, with no baseline.
    New,
    /// In the baseline, not measured.
    Missing,
}

impl Verdict {
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Unchanged => "unchanged",
            Verdict::WithinTolerance => "within tolerance",
            Verdict::Regressed => "REGRESSED",
            Verdict::Improved => "improved",
            Verdict::New => "new",
            Verdict::Missing => "missing",
        }
    }
}

/// One metric of one board, model and scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub board: String,
    pub model: String,
    pub scenario: String,
    pub metric: String,
    pub baseline: Option<i64>,
    pub measured: Option<i64>,
    pub verdict: Verdict,
    /// For `flash_bytes` and `static_ram_bytes` in the build record: the
    /// components of the footprint that moved, largest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub moved: Vec<(String, i64)>,
}

impl Row {
    pub fn delta(&self) -> Option<i64> {
        Some(self.measured? - self.baseline?)
    }

    /// The change in percent of the baseline.
    pub fn delta_percent(&self) -> Option<f64> {
        let base = self.baseline?;
        (base != 0).then(|| self.delta().unwrap_or(0) as f64 * 100.0 / base as f64)
    }
}

/// Every metric of a run against its baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// Where the baselines were read: `work tree` or a git revision.
    pub against: String,
    /// Images built with another TFLM, or other kernels, than their
    /// baseline was measured on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runtime_changes: Vec<RuntimeChange>,
    pub rows: Vec<Row>,
}

/// A board and model whose baseline was measured on TFLM (or kernels)
/// `from` and whose image now runs `to`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuntimeChange {
    pub board: String,
    pub model: String,
    /// What changed: `TFLM` or `kernels`.
    #[serde(default = "tflm")]
    pub what: String,
    pub from: String,
    pub to: String,
}

fn tflm() -> String {
    "TFLM".to_owned()
}

impl Comparison {
    pub fn count(&self, verdict: Verdict) -> usize {
        self.rows.iter().filter(|r| r.verdict == verdict).count()
    }

    /// Whether the run fails: a regression, or with `strict` any change.
    pub fn fails(&self, strict: bool) -> bool {
        self.rows.iter().any(|r| match r.verdict {
            Verdict::Regressed => true,
            Verdict::New | Verdict::Missing | Verdict::Improved => strict,
            Verdict::Unchanged | Verdict::WithinTolerance => false,
        })
    }

    /// The rows of one board and model that a new baseline would change
    /// (noise within tolerance does not count).
    pub fn changes<'a>(&'a self, board: &'a str, model: &'a str) -> impl Iterator<Item = &'a Row> + 'a {
        self.rows.iter().filter(move |r| {
            r.board == board && r.model == model && !matches!(r.verdict, Verdict::Unchanged | Verdict::WithinTolerance)
        })
    }
}

pub fn verdict(tolerance: Tolerance, baseline: Option<i64>, measured: Option<i64>) -> Verdict {
    match (baseline, measured) {
        (None, _) => Verdict::New,
        (Some(_), None) => Verdict::Missing,
        (Some(b), Some(m)) if m == b => Verdict::Unchanged,
        (Some(b), Some(m)) if tolerance.allows(b, (m - b).abs()) => Verdict::WithinTolerance,
        (Some(b), Some(m)) if m < b => Verdict::Improved,
        _ => Verdict::Regressed,
    }
}

/// Compares every record of `results` with its baseline from `source`.
pub fn compare(results: &Results, source: &Source, policy: &Policy) -> Result<Comparison, BaselineError> {
    let mut baselines: BTreeMap<(String, String), Option<BaselineFile>> = BTreeMap::new();
    let mut rows = Vec::new();
    for record in &results.records {
        let key = (record.board.clone(), record.model.clone());
        if !baselines.contains_key(&key) {
            baselines.insert(key.clone(), source.load(&record.board, &record.model)?);
        }
        let baseline_file = baselines[&key].as_ref();
        let approved = baseline_file.and_then(|b| b.scenario.get(&record.scenario));
        // Which components moved, where both sides have a footprint.
        let parts = |f: &Footprint, metric: &str| match metric {
            metric::FLASH_BYTES => Some(f.flash.clone()),
            metric::STATIC_RAM_BYTES => Some(f.static_ram.clone()),
            _ => None,
        };
        let moved = |metric: &str| match (baseline_file.and_then(|b| b.footprint.as_ref()), &record.footprint) {
            (Some(old), Some(new)) => parts(old, metric).zip(parts(new, metric)).map(|(o, n)| moved(&o, &n)),
            _ => None,
        };
        let measured: BTreeMap<&str, i64> =
            record.metrics.iter().filter(|(k, _)| is_baselined(k)).map(|(k, v)| (k.as_str(), *v)).collect();
        let mut names: Vec<&str> = measured.keys().copied().collect();
        names.extend(approved.into_iter().flat_map(|a| a.keys().map(String::as_str)));
        names.sort();
        names.dedup();
        for metric in names {
            let baseline = approved.and_then(|a| a.get(metric)).copied();
            let value = measured.get(metric).copied();
            rows.push(Row {
                board: record.board.clone(),
                model: record.model.clone(),
                scenario: record.scenario.clone(),
                metric: metric.to_owned(),
                baseline,
                measured: value,
                verdict: verdict(policy.tolerance(&record.board, metric), baseline, value),
                moved: if baseline != value { moved(metric).unwrap_or_default() } else { Vec::new() },
            });
        }
    }
    let mut runtime_changes = Vec::new();
    for image in &results.images {
        let key = (image.board.clone(), image.model.clone());
        if !baselines.contains_key(&key) {
            baselines.insert(key.clone(), source.load(&image.board, &image.model)?);
        }
        let Some(baseline) = baselines[&key].as_ref() else { continue };
        for (what, from, to) in
            [("TFLM", &baseline.meta.tflm, &image.tflm), ("kernels", &baseline.meta.kernels, &image.kernels)]
        {
            if from != to {
                runtime_changes.push(RuntimeChange {
                    board: image.board.clone(),
                    model: image.model.clone(),
                    what: what.to_owned(),
                    from: from.clone(),
                    to: to.clone(),
                });
            }
        }
    }
    let against = match source {
        Source::WorkTree(_) => "work tree".to_owned(),
        Source::Revision { rev, .. } => rev.clone(),
    };
    Ok(Comparison { against, runtime_changes, rows })
}

/// One row per metric whose value differs between `old` and `new`.
pub fn diff_rows(
    board: &str,
    model: &str,
    scenario: &str,
    old: &BTreeMap<String, i64>,
    new: &BTreeMap<String, i64>,
) -> Vec<Row> {
    let mut names: Vec<&String> = old.keys().chain(new.keys()).collect();
    names.sort();
    names.dedup();
    names
        .into_iter()
        .filter(|m| old.get(*m) != new.get(*m))
        .map(|metric| {
            let (baseline, measured) = (old.get(metric).copied(), new.get(metric).copied());
            Row {
                board: board.to_owned(),
                model: model.to_owned(),
                scenario: scenario.to_owned(),
                metric: metric.clone(),
                baseline,
                measured,
                verdict: verdict(Default::default(), baseline, measured),
                moved: Vec::new(),
            }
        })
        .collect()
}

/// Every changed figure between the baselines of two sources.
pub fn diff(from: &Source, to: &Source) -> Result<Vec<Row>, BaselineError> {
    let mut pairs = list(from)?;
    pairs.extend(list(to)?);
    pairs.sort();
    pairs.dedup();
    let mut rows = Vec::new();
    for (board, model) in pairs {
        let old = from.load(&board, &model)?.map(|b| b.scenario).unwrap_or_default();
        let new = to.load(&board, &model)?.map(|b| b.scenario).unwrap_or_default();
        let mut scenarios: Vec<&String> = old.keys().chain(new.keys()).collect();
        scenarios.sort();
        scenarios.dedup();
        for scenario in scenarios {
            let empty = BTreeMap::new();
            let (o, n) = (old.get(scenario).unwrap_or(&empty), new.get(scenario).unwrap_or(&empty));
            rows.extend(diff_rows(&board, &model, scenario, o, n));
        }
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts() {
        let exact = Tolerance::default();
        assert_eq!(verdict(exact, Some(100), Some(100)), Verdict::Unchanged);
        assert_eq!(verdict(exact, Some(100), Some(99)), Verdict::Improved);
        assert_eq!(verdict(exact, Some(100), Some(101)), Verdict::Regressed);
        assert_eq!(verdict(exact, None, Some(1)), Verdict::New);
        assert_eq!(verdict(exact, Some(1), None), Verdict::Missing);

        let bytes = Tolerance { bytes: Some(16), percent: None };
        assert_eq!(verdict(bytes, Some(100), Some(116)), Verdict::WithinTolerance);
        assert_eq!(verdict(bytes, Some(100), Some(117)), Verdict::Regressed);
        assert_eq!(verdict(bytes, Some(100), Some(84)), Verdict::WithinTolerance, "noise both ways");
        assert_eq!(verdict(bytes, Some(100), Some(83)), Verdict::Improved);
        let percent = Tolerance { bytes: None, percent: Some(10) };
        assert_eq!(verdict(percent, Some(1000), Some(1100)), Verdict::WithinTolerance);
        assert_eq!(verdict(percent, Some(1000), Some(1101)), Verdict::Regressed);
        let both = Tolerance { bytes: Some(50), percent: Some(10) };
        assert_eq!(verdict(both, Some(1000), Some(1050)), Verdict::WithinTolerance);
        assert_eq!(verdict(both, Some(1000), Some(1051)), Verdict::Regressed, "bytes limit");
        assert_eq!(verdict(both, Some(100), Some(120)), Verdict::Regressed, "percent limit");
    }

    #[test]
    fn board_overrides_win() {
        let policy: Policy = strict_toml::parse(
            Path::new("policy.toml"),
            "[tolerance]\nrss_peak_bytes = { percent = 20 }\n[board.host.tolerance]\nrss_peak_bytes = { bytes = 4096 }\n",
        )
        .unwrap();
        assert_eq!(policy.tolerance("qemu-m7", "rss_peak_bytes").percent, Some(20));
        assert_eq!(policy.tolerance("host", "rss_peak_bytes"), Tolerance { bytes: Some(4096), percent: None });
        assert_eq!(policy.tolerance("host", "stack_peak_bytes"), Tolerance::default());
        let err =
            strict_toml::parse::<Policy>(Path::new("policy.toml"), "[tolerance]\nx = { byte = 1 }\n").unwrap_err();
        assert!(err.to_string().contains("unknown field `byte`"), "{err}");
    }

    #[test]
    fn strictness() {
        let row = |verdict| Row {
            board: "b".into(),
            model: "m".into(),
            scenario: "s".into(),
            metric: "x_bytes".into(),
            baseline: Some(1),
            measured: Some(1),
            verdict,
            moved: Vec::new(),
        };
        let c = |v| Comparison {
            against: "work tree".into(),
            runtime_changes: vec![],
            rows: vec![row(Verdict::Unchanged), row(v)],
        };
        assert!(c(Verdict::Regressed).fails(false));
        for v in [Verdict::New, Verdict::Missing, Verdict::Improved] {
            assert!(!c(v).fails(false) && c(v).fails(true), "{v:?}");
        }
        assert!(!c(Verdict::WithinTolerance).fails(true));
    }
}

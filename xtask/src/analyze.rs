//! `cargo xtask analyze`: a model's memory plan before anything is built,
//! and whether the chosen TFLM registers its operators.

use anyhow::{Context, Result};
use harness::config::board::Board;
use harness::config::fit;
use harness::config::models::{self, ModelSpec, SetSpec};
use harness::config::runtime::Runtime;
use harness::model::analysis::{Analysis, SetAnalysis};
use harness::model::planner::Planner;
use harness::model::tail::cmsis_nn::KernelPath;
use harness::model::tflite;
use harness::tflm::registry::Operators;
use harness::tflm::tree::{Generation, Kernels};
use harness::{report, Workspace};

use harness::exit;

#[derive(clap::Args)]
pub struct Args {
    /// A model of the models file, or the path of a .tflite file.
    #[arg(required_unless_present = "operators")]
    model: Option<String>,
    /// Instead of a model: which operators the analyzer predicts the arena
    /// of, for the bundled 2020 TFLM and for the current one `--tflm`
    /// names (its resolver's registrations), as a Markdown table.
    #[arg(long, conflicts_with_all = ["board", "planner", "kernels", "format"])]
    operators: bool,
    /// Also show how the arena fits this board's budget and RAM.
    #[arg(long)]
    board: Option<String>,
    /// Models file [default: hil.toml at the repository root].
    #[arg(long)]
    config: Option<std::path::PathBuf>,
    /// The TFLM whose operators the model is checked against: a TFLM tree,
    /// or `bundled` [default: as `hil` chooses it].
    #[arg(long)]
    tflm: Option<String>,
    /// The planner the predicted arena is for [default: the model's
    /// `planner` in the models file, else greedy].
    #[arg(long, value_parser = ["greedy", "linear", "offline"])]
    planner: Option<String>,
    /// The kernels the predicted arena is for; `cmsis-nn` needs `--board`,
    /// whose core decides CMSIS-NN's code path [default: the model's
    /// `kernels` in the models file, else reference].
    #[arg(long, value_parser = ["reference", "cmsis-nn"])]
    kernels: Option<String>,
    /// Output on stdout.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Format {
    Table,
    Json,
}

pub fn run(args: Args) -> Result<i32> {
    let ws = Workspace::from_source();
    let file = args.config.unwrap_or_else(|| ws.models_file());
    let loaded = models::load(&file)?;
    let runtime = loaded.runtime(args.tflm)?;
    let Some(name) = args.model else {
        if runtime.generation() != Generation::Current {
            anyhow::bail!("--operators: name a current TFLM checkout with --tflm (the table covers its resolver); {runtime} is not one");
        }
        print!("{}", report::analysis::operator_coverage(&Operators::bundled(), &runtime.operators));
        return Ok(exit::OK);
    };
    let found = loaded.models.into_iter().find(|m| m.name == name);
    if let Some(set) = found.as_ref().and_then(|spec| Some((spec, spec.set.as_ref()?))) {
        return analyze_set(set, &runtime, args.format);
    }
    let (path, planner, kernels) = match found {
        Some(spec) => (spec.file, spec.planner, spec.kernels),
        None => (std::path::PathBuf::from(&name), Planner::Greedy, Kernels::Reference),
    };
    let kernels = args.kernels.as_deref().and_then(Kernels::named).unwrap_or(kernels);
    let board = args.board.as_deref().map(|name| Board::load(&ws, name)).transpose()?;
    if kernels == Kernels::CmsisNn {
        runtime.builds(kernels).map_err(|why| anyhow::anyhow!("kernels = \"cmsis-nn\": {why}"))?;
        if board.as_ref().is_none_or(|b| b.tflm_arch.is_none()) {
            anyhow::bail!(
                "kernels = \"cmsis-nn\": name a Cortex-M board with --board; its core decides CMSIS-NN's code path \
                 and so the scratch buffers its kernels ask for"
            );
        }
    }
    let kernel_path = KernelPath::of(kernels, board.as_ref().and_then(|b| b.tflm_arch.as_deref()));
    let planner = match args.planner.as_deref() {
        Some(name) => *Planner::ALL.iter().find(|p| p.name() == name).expect("clap checks the name"),
        None => planner,
    };
    let bytes = std::fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
    let model = tflite::read(&bytes).with_context(|| format!("{} is not a TFLite flatbuffer", path.display()))?;
    let analysis = Analysis::of(&name, &model, runtime.generation(), kernel_path, planner)
        .with_context(|| format!("cannot analyse {} for {runtime}", path.display()))?;
    let unsupported = runtime.operators.missing(&model);
    // Where the model's least arena is not predicted the fit is not either;
    // the analysis still stands, and the run says why. A board the
    // prediction is not for is an error.
    let (fit, no_fit) = match board.as_ref().map(|board| fit::fit(&analysis, board)) {
        Some(Ok(fit)) => (Some(fit), None),
        Some(Err(why @ fit::NotPredicted::Model { .. })) => (None, Some(why.to_string())),
        Some(Err(e)) => return Err(e.into()),
        None => (None, None),
    };
    match args.format {
        Format::Table => {
            println!("{}", report::analysis::analysis(&analysis));
            println!("runtime: {runtime}");
            if !unsupported.is_empty() {
                println!("{runtime} does not register: {}", unsupported.join(", "));
            }
            if let Some(fit) = &fit {
                println!("{}", report::analysis::fit(fit));
            }
            if let Some(why) = &no_fit {
                println!("fit: not predicted: {why}");
            }
        }
        Format::Json => {
            // The analysis, the runtime's verdict, and the fit when a board was given.
            let mut output = serde_json::to_value(&analysis).expect("analysis serializes");
            output["runtime"] = runtime.identity.clone().into();
            output["unsupported"] = unsupported.clone().into();
            if let Some(fit) = &fit {
                output["fit"] = serde_json::to_value(fit).expect("fit serializes");
            }
            if let Some(why) = &no_fit {
                output["fit_not_predicted"] = why.clone().into();
            }
            println!("{}", serde_json::to_string_pretty(&output).expect("analysis serializes"));
        }
    }
    Ok(if !unsupported.is_empty() {
        exit::ERROR
    } else if fit.as_ref().is_some_and(|f| !f.fits()) {
        exit::REGRESSION
    } else {
        exit::OK
    })
}

/// A resident set: each model's arena alone and what it adds to a shared
/// arena, and the set's total both ways.
fn analyze_set((spec, set): (&ModelSpec, &SetSpec), runtime: &Runtime, format: Format) -> Result<i32> {
    let mut members = Vec::new();
    for m in &set.models {
        let model = m.parse()?;
        if m.kernels != Kernels::Reference {
            anyhow::bail!("set `{}`: the analysis of a set is for the reference kernels", spec.name);
        }
        let analysis = Analysis::of(&m.name, &model.parsed, runtime.generation(), KernelPath::Reference, m.planner)
            .with_context(|| format!("cannot analyse model `{}` for {runtime}", m.name))?;
        members.push((analysis, model.parsed));
    }
    let pairs: Vec<_> = members.iter().map(|(a, m)| (a, m)).collect();
    let Some(analysis) = SetAnalysis::of(&pairs)? else {
        let caveats: Vec<String> = members.into_iter().flat_map(|(a, _)| a.caveats).collect();
        anyhow::bail!("set `{}`: no arena prediction for {runtime}: {}", spec.name, caveats.join("; "));
    };
    match format {
        Format::Table => {
            println!("{}\nruntime: {runtime}", report::analysis::set_analysis(&spec.name, set.sharing, &analysis))
        }
        Format::Json => println!("{}", serde_json::to_string_pretty(&analysis).expect("analysis serializes")),
    }
    Ok(exit::OK)
}

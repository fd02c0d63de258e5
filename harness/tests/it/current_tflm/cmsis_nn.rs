//! ARM's CMSIS-NN kernels (`kernels = "cmsis-nn"`), built as TFLM's Makefile
//! builds them (`OPTIMIZED_KERNEL_DIR=cmsis_nn`) from the current checkout
//! and the CMSIS-NN downloads beside it, for each emulated Cortex-M core
//! with that core's own compiler flags: every example model answers right,
//! TFLM's own account of the arena adds up, and the analyzer predicts the
//! arena exactly; what CMSIS-NN does not change is compiled once, for the
//! reference library of the core.

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::SystemTime;

use harness::config::runtime::{Runtime, BUNDLED};

use harness::config::{fit, models};
use harness::image::footprint::CMSIS_NN;
use harness::run::measurement::{Measurement, BUILD};
use harness::run::{self, Options};
use harness::tflm::tree::{cpu_flags, cpu_flags_in_makefile};
use harness::tflm::tree::{Generation, Kernels};
use hilmem_protocol::metric;
use hilmem_protocol::scenario::SINGLE_FRAME;

use super::{build_of, current_tflm, with_arenas};
use crate::support::{board, ran, ws};

/// The emulated Cortex-M boards: one core of each CMSIS-NN code path (the
/// M3 has neither DSP nor MVE, the M4 and M7 have DSP, the M55 MVE).
const CORES: [&str; 4] = ["qemu-m3", "qemu-m4", "qemu-m7", "qemu-m55"];

///
/// Each with `arena_bytes = "auto"`: the least arena the analyzer predicts
/// for the core's CMSIS-NN code path plus the board's margin; the firmware
/// finds that same least arena.
#[test]
fn every_example_model_answers_right_with_cmsis_nn_on_each_cortex_m_core() {
    let runtime = current_tflm();
    let models_file = ws().root().join("firmware/models/current/hil.toml");
    let file = models::load(&models_file).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let auto = dir.path().join("hil.toml");
    std::fs::write(&auto, with_arenas(&models_file, |_| vec![(String::new(), "\"auto\"".into())])).unwrap();
    let mut options = Options::new(&ws(), CORES.map(board).to_vec());
    options.models_file = auto;
    options.scenarios = vec![SINGLE_FRAME.into()];
    options.tflm = runtime.dir().map(|d| d.display().to_string());
    options.kernels = Some(Kernels::CmsisNn);
    let started = SystemTime::now();
    let results = run::run(&ws(), &options, &|_| {}).unwrap();
    assert!(results.failed.is_empty(), "{:#?}", results.failed);
    assert!(results.images.iter().all(|i| i.kernels == "cmsis-nn"), "{:?}", results.images);
    // Each image's flash names the CMSIS-NN library its kernels call.
    for build in results.records.iter().filter(|r| r.scenario == BUILD) {
        let library = build.footprint.as_ref().and_then(|f| f.flash.get(CMSIS_NN)).copied();
        assert!(library.is_some_and(|bytes| bytes > 0), "{}/{}: {:?}", build.board, build.model, build.footprint);
    }
    let measured: Vec<&Measurement> = ran(&results).collect();
    assert_eq!(measured.len(), CORES.len() * file.models.len());
    for record in &measured {
        let what = format!("{}/{}", record.board, record.model);
        assert!(record.passed(), "{what}: {:?}", record.checks);
        // Head and tail from TFLM's own lines add up to its arena_used_bytes.
        let m = &record.metrics;
        assert_eq!(m[metric::ARENA_HEAD_BYTES] + m[metric::ARENA_TAIL_BYTES], m[metric::ARENA_USED_BYTES], "{what}");
        // The analyzer predicts it to the byte, from the model file and the
        // core's CMSIS-NN code path.
        let prediction = record.arena_prediction.unwrap_or_else(|| panic!("{what}: {:?}", record.notes));
        assert_eq!(prediction.difference(), 0, "{what}: predicted {prediction:?}");
        // So it does the least arena, which "auto" sized the arena from.
        let predicted = build_of(&results, record).metrics[metric::PREDICTED_LEAST_ARENA_BYTES];
        assert_eq!(m[metric::LEAST_ARENA_BYTES], predicted, "{what}: found, predicted");
        let margin = board(&record.board).budget.safety_margin_percent;
        assert_eq!(m[metric::ARENA_CAPACITY_BYTES] as usize, fit::with_margin(predicted as usize, margin), "{what}");
    }
    // What a firmware built with TFLM's own Makefile from tflite-micro
    // 90b983c (`TARGET=cortex_m_generic OPTIMIZED_KERNEL_DIR=cmsis_nn`,
    // `TARGET_ARCH=cortex-m7+fp` and `cortex-m55`, a small main on QEMU)
    // reported for TFLM's hello_world_int8: the arena of the firmware users
    // ship, which reference kernels (676 bytes) do not give.
    let used = |board: &str| {
        let record = measured.iter().find(|r| r.board == board && r.model == "hello_world_int8").unwrap();
        record.metrics[metric::ARENA_USED_BYTES]
    };
    assert_eq!(
        (used("qemu-m7"), used("qemu-m55")),
        (772, 916),
        "TFLM's own CMSIS-NN build of 90b983c reports these; is the checkout another commit?"
    );
    // Each core's CMSIS-NN library (the directories of the cache these
    // builds locked) links the objects of the sources that preprocess to the
    // same text with CMSIS-NN's defines and includes, such as the
    // interpreter's, from the reference library of that core; it compiles
    // its own of a source that tests `CMSIS_NN`, the profiler's.
    let links = |library: &Path, stem: &str| -> Vec<u64> {
        let objects = std::fs::read_dir(library).unwrap().map(|e| e.unwrap());
        let named = objects.filter(|e| e.file_name().to_string_lossy().starts_with(&format!("{stem}-")));
        named.map(|e| e.metadata().unwrap().nlink()).collect()
    };
    let libraries: Vec<_> = std::fs::read_dir(ws().tflm_cache())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|dir| std::fs::metadata(dir.join(".lock")).is_ok_and(|m| m.modified().unwrap() >= started))
        .filter(|dir| !links(dir, "arm_convolve_s8").is_empty())
        .collect();
    assert_eq!(libraries.len(), CORES.len(), "{libraries:?}");
    for library in &libraries {
        assert_eq!(links(library, "micro_interpreter"), [2], "{}", library.display());
        assert_eq!(links(library, "micro_profiler"), [1], "{}", library.display());
    }
}

/// TFLM's keyword-spotting benchmark model with CMSIS-NN on the Cortex-M55
/// uses 15,012 bytes of its arena, yet a 16 KiB arena is refused: planning
/// borrows more. The firmware finds the least arena above 16 KiB, where
/// the analyzer predicts it.
#[test]
fn keyword_scrambled_needs_more_than_16_kib_on_the_m55_as_predicted() {
    let runtime = current_tflm();
    let mut options = Options::new(&ws(), vec![board("qemu-m55")]);
    options.models_file = ws().root().join("firmware/models/tflm/hil.toml");
    options.models = vec!["keyword_scrambled".into()];
    options.scenarios = vec![SINGLE_FRAME.into()];
    options.tflm = runtime.dir().map(|d| d.display().to_string());
    options.kernels = Some(Kernels::CmsisNn);
    let results = run::run(&ws(), &options, &|_| {}).unwrap();
    assert!(results.failed.is_empty(), "{:#?}", results.failed);
    let record = ran(&results).next().unwrap();
    let m = &record.metrics;
    assert_eq!(m[metric::ARENA_USED_BYTES], 15_012);
    assert!(m[metric::LEAST_ARENA_BYTES] > 16_384, "{m:?}");
    assert_eq!(m[metric::LEAST_ARENA_BYTES], build_of(&results, record).metrics[metric::PREDICTED_LEAST_ARENA_BYTES]);
}

/// Where CMSIS-NN cannot be built, the model is refused before anything is
/// compiled, naming what is missing: the bundled 2020 TFLM, a host board, a
/// checkout without CMSIS-NN's downloads.
#[test]
fn cmsis_nn_is_refused_where_it_cannot_be_built() {
    let runtime = current_tflm();
    let models_file = ws().root().join("firmware/models/current/hil.toml");
    let file = models::load(&models_file).unwrap().with_kernels(Kernels::CmsisNn);
    let spec = file.models.iter().find(|m| m.name == "hello_world_int8").unwrap();
    let refused = spec.read(&Runtime::bundled()).unwrap_err().to_string();
    assert!(refused.contains("`kernels = \"cmsis-nn\"`") && refused.contains(BUNDLED), "{refused}");
    let model = spec.read(&runtime).unwrap_or_else(|e| panic!("{e}"));
    let refused = model.arena_bytes(&board("host"), Generation::Current).unwrap_err().to_string();
    assert!(refused.contains("board `host` is a host"), "{refused}");
    for name in CORES {
        model.arena_bytes(&board(name), Generation::Current).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

/// The flags every tree is compiled with for a core are those the current
/// checkout's own Makefile gives that core (`TARGET_ARCH`), for every core
/// a board of hilmem can have.
#[test]
fn each_cores_flags_are_those_of_tflms_own_makefile() {
    let runtime = current_tflm();
    let root = runtime.dir().unwrap();
    let arches = ["cortex-m0", "cortex-m0plus", "cortex-m3", "cortex-m4", "cortex-m4+fp", "cortex-m7", "cortex-m7+fp"]
        .into_iter()
        .chain(["cortex-m33", "cortex-m55", "cortex-m55+nofp", "cortex-m85"]);
    for arch in arches {
        let mut ours = cpu_flags(arch).unwrap();
        let mut theirs = cpu_flags_in_makefile(root, arch).unwrap();
        ours.sort();
        theirs.sort();
        assert_eq!(ours, theirs, "{arch}");
    }
    for name in CORES {
        let arch = board(name).tflm_arch.unwrap();
        assert!(cpu_flags(&arch).unwrap().contains(&format!("-mcpu={}", arch.trim_end_matches("+fp"))), "{name}");
    }
}

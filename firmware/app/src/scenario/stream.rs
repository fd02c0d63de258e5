//! `stream`, `log-heavy` and `concurrent-ota`: many frames through two
//! managed buffers (camera fill, inference, post-processing, upload pending),
//! with heavy logging into a ring drained by the transport, or with a model
//! update arriving in chunks while the frames run.

use core::fmt::Write;

use arena::budget::Health;
use arena::lifecycle::{Buffers, State, Timeouts};
use arena::ota::{self, Metadata};
use arena::{Category, LogRing};
use hilmem_protocol::ota::{Header, HEADER_BYTES};
use hilmem_protocol::{exit, metric, Frame, WARM_UP_FRAMES as WARM_UP};

use super::{fail, fail_with_tflm_messages, pool_failure, report, report_figures, send, Rig, Text, LOG_RING_BYTES};
use crate::{config, platform};

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Plain,
    LogHeavy,
    ConcurrentOta,
    /// The concurrent-OTA stream with one bit of the update flipped on its
    /// way in (a self-test: verification must refuse it).
    CorruptOta,
}

impl Mode {
    fn updates(self) -> bool {
        matches!(self, Mode::ConcurrentOta | Mode::CorruptOta)
    }
}

/// Named inputs of a model.
type Inputs = &'static [(&'static str, &'static [u8])];
/// A model's answer: class and first output value.
type Answer = (u32, f32);

/// The version of the model built into the firmware.
const RUNNING_VERSION: u32 = 1;
/// Longest stay in each state, in pipeline steps.
const TIMEOUTS: Timeouts = Timeouts { camera_filling: 2, infer_running: 2, postprocessing: 2, upload_pending: 4 };

/// The logical clock of the pipeline: one tick per step, so timestamps and
/// timeouts are the same on every board and every run.
struct Clock(u32);

impl Clock {
    fn tick(&mut self) -> u32 {
        self.0 += 1;
        self.0
    }
}

/// An update on its way in: the header, and the model bytes received so far.
struct Download {
    header: Header,
    staging: &'static mut [u8],
    received: usize,
}

#[inline(never)]
pub fn run(mut rig: Rig, mode: Mode, frames: u32) -> i32 {
    if frames <= WARM_UP {
        let mut detail = Text::<64>::new();
        let _ = write!(detail, "needs more than {WARM_UP} frames, got {frames}");
        return fail("command", 0, detail.as_str());
    }
    if let Err(e) = rig.load_painted(config::MODEL) {
        return fail_with_tflm_messages("load", e);
    }
    let mut log = match mode {
        Mode::LogHeavy => match rig.pool.alloc(Category::Log, LOG_RING_BYTES) {
            Ok(buf) => Some(LogRing::new(buf)),
            Err(e) => return pool_failure("log", "log ring", e),
        },
        _ => None,
    };
    // The running model's inputs; after an accepted update, the new model's.
    let mut inputs: Inputs = &config::INPUTS;
    let mut answers = [(0u32, 0f32); config::INPUTS.len()];
    let mut ota_answer = None;
    let mut download = None;
    let mut ota_decided = false;
    let mut ota_accepted = false;

    let mut buffers = Buffers::<2>::default();
    let mut clock = Clock(0);
    let mut pending: Option<(usize, &'static mut [u8])> = None;
    let mut at_warm_up = (0usize, 0usize);

    for n in 0..frames {
        let (name, data) = inputs[n as usize % inputs.len()];
        // Camera: a FREE buffer is filled.
        let Ok(id) = buffers.acquire(clock.tick()) else {
            return fail("lifecycle", 0, "no FREE buffer for the next frame");
        };
        let frame = match rig.pool.alloc(Category::InputFrame, data.len()) {
            Ok(frame) => frame,
            Err(e) => return pool_failure("input", name, e),
        };
        frame.copy_from_slice(data);
        if let Some(log) = log.as_mut() {
            let _ =
                writeln!(log, "frame {n}: buffer {id} {} at t={} <- `{name}`", State::CameraFilling.name(), clock.0);
        }

        // Inference; the update's next chunk arrives meanwhile.
        let _ = buffers.advance(id, State::InferRunning, clock.tick());
        if let Err(status) = rig.infer(name, frame) {
            return status;
        }
        let mut downloaded = false;
        if mode.updates() && !ota_decided {
            match receive_chunk(&mut rig, &mut download, frames, mode == Mode::CorruptOta) {
                Err(status) => return status,
                Ok(complete) => downloaded = complete,
            }
        }

        // Post-processing: the answer is read through its own buffer.
        let _ = buffers.advance(id, State::Postprocessing, clock.tick());
        let answer = match rig.answer(name) {
            Ok(answer) => answer,
            Err(status) => return status,
        };
        if !ota_accepted {
            answers[n as usize % config::INPUTS.len()] = answer;
        }
        if let Some(log) = log.as_mut() {
            let (class, value) = answer;
            let _ = writeln!(
                log,
                "frame {n}: class {class} score {value:.4} ({} at t={})",
                State::Postprocessing.name(),
                clock.0
            );
        }

        // A complete update is decided once this frame's answer is out.
        if downloaded {
            ota_decided = true;
            let d = download.take().expect("a finished download");
            match activate(&mut rig, d) {
                Err(status) => return status,
                Ok(Some((accepted_inputs, answer))) => {
                    ota_accepted = true;
                    inputs = accepted_inputs;
                    ota_answer = Some(answer);
                }
                Ok(None) => {}
            }
        }

        // Upload: the previous frame's upload completes, this one's starts.
        let now = clock.tick();
        if let Some((previous, memory)) = pending.take() {
            rig.pool.free(memory).expect("block from this pool");
            let _ = buffers.advance(previous, State::Free, now);
        }
        if let Err(e) = buffers.advance(id, State::UploadPending, now) {
            let mut detail = Text::<96>::new();
            let _ = write!(detail, "{e}");
            return fail("lifecycle", 0, detail.as_str());
        }
        pending = Some((id, frame));
        if let Some(stuck) = buffers.stuck(clock.0, &TIMEOUTS) {
            let mut detail = Text::<96>::new();
            let _ = write!(detail, "buffer {} stuck in {} for {} steps", stuck.buffer, stuck.state.name(), stuck.age);
            return fail("lifecycle", 0, detail.as_str());
        }
        if let Some(log) = log.as_mut() {
            let _ = writeln!(
                log,
                "frame {n}: buffer {id} {} at t={}, heap {} bytes",
                State::UploadPending.name(),
                clock.0,
                rig.pool.usage().used
            );
            log.drain(platform::write);
        }
        if n + 1 == WARM_UP {
            at_warm_up = steady_usage(&rig);
        }
    }
    let at_end = steady_usage(&rig);
    let (heap_now, peak_now) = (at_end.0 as i64 - at_warm_up.0 as i64, at_end.1 as i64 - at_warm_up.1 as i64);

    let figures = rig.figures();
    report_figures(&figures);
    report(&[
        (metric::FRAMES, i64::from(frames)),
        (metric::HEAP_GROWTH_BYTES, heap_now.max(peak_now)),
        (metric::LIFECYCLE_TRANSITIONS, i64::from(buffers.transitions())),
    ]);
    if let Some(log) = &log {
        report(&[(metric::LOG_RING_PEAK_BYTES, log.peak() as i64), (metric::LOG_DROPPED_BYTES, log.dropped() as i64)]);
    }
    if mode.updates() {
        report(&[(metric::OTA_ACCEPTED, i64::from(ota_accepted))]);
        if let Some((class, value)) = ota_answer {
            send(Frame::Output { input: config::OTA_INPUTS[0].0, class, value });
        }
    }
    for ((name, _), (class, value)) in config::INPUTS.iter().zip(answers) {
        send(Frame::Output { input: name, class, value });
    }
    send(Frame::Done { ok: true });
    exit::OK
}

/// Pool bytes in use and at most, outside the OTA staging buffer (which an
/// accepted update keeps on purpose).
fn steady_usage(rig: &Rig) -> (usize, usize) {
    let total = rig.pool.usage();
    let ota = rig.pool.category(Category::OtaStaging);
    (total.used - ota.used, total.peak - ota.peak)
}

/// Copies the next chunk of the incoming package into the staging buffer.
/// The package is spread over the first half of the frames; with `corrupt`,
/// the first byte of the model arrives with its lowest bit flipped. Returns
/// whether the download is complete.
fn receive_chunk(rig: &mut Rig, download: &mut Option<Download>, frames: u32, corrupt: bool) -> Result<bool, i32> {
    let package = config::OTA_PACKAGE;
    let d = match download {
        Some(d) => d,
        None => {
            let header = Header::decode(package).map_err(|_| fail("ota", 0, "the update has no valid header"))?;
            let staging = rig
                .pool
                .alloc(Category::OtaStaging, header.model_bytes as usize)
                .map_err(|e| pool_failure("ota", "staging buffer", e))?;
            download.insert(Download { header, staging, received: 0 })
        }
    };
    let model = &package[HEADER_BYTES..];
    let chunk = model.len().div_ceil((frames as usize / 2).max(1)).max(1);
    let end = (d.received + chunk).min(model.len()).min(d.staging.len());
    d.staging[d.received..end].copy_from_slice(&model[d.received..end]);
    if corrupt && d.received == 0 {
        d.staging[0] ^= 1;
    }
    d.received = end;
    Ok(d.received == d.staging.len())
}

/// Verifies a complete download, lets the gate decide, and activates an
/// accepted model in the shared arena, where it runs one inference. Returns
/// the new model's inputs and answer when accepted; a refused update leaves the
/// running model as it was, and one that fails to load puts it back.
fn activate(rig: &mut Rig, d: Download) -> Result<Option<(Inputs, Answer)>, i32> {
    let decision = |accepted: bool, why: &dyn core::fmt::Display| {
        let mut text = Text::<160>::new();
        let _ = write!(text, "{}: {why}", if accepted { "accepted" } else { "rejected" });
        send(Frame::Note { name: "ota_gate", text: text.as_str() });
    };
    let h = &d.header;
    let refusal = match h.verify(d.staging) {
        Err(e) => Some(Reason::Package(e)),
        Ok(()) => {
            let meta = Metadata {
                version: h.version,
                min_arena_bytes: h.min_arena_bytes,
                max_arena_bytes: h.max_arena_bytes,
                min_free_heap_bytes: h.min_free_heap_bytes,
            };
            let health = Health {
                free_heap_bytes: rig.pool.free_bytes() as u32,
                stack_bytes: rig.stack.size() as u32,
                stack_peak_bytes: platform::stack_bound(rig.stack.peak()) as u32,
                arena_need_bytes: 0,
                arena_capacity_bytes: config::ARENA_BYTES as u32,
            };
            ota::check(&meta, RUNNING_VERSION, &config::BUDGET, &config::GATE, &health).err().map(Reason::Gate)
        }
    };
    if let Some(reason) = refusal {
        decision(false, &reason);
        rig.pool.free(d.staging).expect("block from this pool");
        return Ok(None);
    }

    // Serial inference: the new model takes over the same arena.
    let staging: &'static [u8] = d.staging;
    if let Err(e) = rig.load(staging) {
        // It did not fit after all: put the running model back.
        crate::tflm::with_messages(|said| decision(false, &Activation(e.what(), said)));
        rig.load(config::MODEL).map_err(|e| fail_with_tflm_messages("load", e))?;
        return Ok(None);
    }
    decision(true, &"activated in the shared arena");
    let (name, data) = config::OTA_INPUTS[0];
    rig.infer(name, data)?;
    let answer = rig.answer(name)?;
    Ok(Some((&config::OTA_INPUTS, answer)))
}

enum Reason {
    Package(hilmem_protocol::ota::PackageError),
    Gate(ota::OtaRefusal),
}

impl core::fmt::Display for Reason {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Reason::Package(e) => write!(f, "{e}"),
            Reason::Gate(e) => write!(f, "{e}"),
        }
    }
}

struct Activation<'a>(&'static str, &'a str);

impl core::fmt::Display for Activation<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "activation failed: {} ({})", self.0, self.1)
    }
}

//! Managed buffers: each frame buffer goes through one cycle,
//! FREE → CAMERA_FILLING → INFER_RUNNING → POSTPROCESSING → UPLOAD_PENDING → FREE.
//!
//! Only the next state of the cycle is legal; a buffer that is not FREE is
//! never handed out; a buffer an asynchronous writer (a camera's DMA) still
//! holds does not leave CAMERA_FILLING; every transition is timestamped (in
//! the caller's clock), and a buffer that stays in a state longer than that
//! state's timeout is reported as stuck.
//!
//! With the `unchecked` feature the checks are compiled out: any transition
//! is taken. That build exists only to show what the checks prevent.

use core::fmt;

/// Where a managed buffer is in its cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Free,
    CameraFilling,
    InferRunning,
    Postprocessing,
    UploadPending,
}

impl State {
    /// The one state that may follow this one.
    pub fn next(self) -> State {
        match self {
            State::Free => State::CameraFilling,
            State::CameraFilling => State::InferRunning,
            State::InferRunning => State::Postprocessing,
            State::Postprocessing => State::UploadPending,
            State::UploadPending => State::Free,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            State::Free => "FREE",
            State::CameraFilling => "CAMERA_FILLING",
            State::InferRunning => "INFER_RUNNING",
            State::Postprocessing => "POSTPROCESSING",
            State::UploadPending => "UPLOAD_PENDING",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LifecycleError {
    /// Every buffer is in use.
    NoneFree,
    /// Only `from.next()` may follow `from`.
    Illegal { buffer: usize, from: State, to: State },
    /// There is no buffer with this index.
    NoSuchBuffer(usize),
    /// An asynchronous writer still fills it.
    Writing { buffer: usize, state: State },
}

impl fmt::Display for LifecycleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LifecycleError::NoneFree => f.write_str("no managed buffer is FREE"),
            LifecycleError::Illegal { buffer, from, to } => {
                write!(f, "buffer {buffer}: {} may not follow {}", to.name(), from.name())
            }
            LifecycleError::NoSuchBuffer(b) => write!(f, "no managed buffer {b}"),
            LifecycleError::Writing { buffer, state } => {
                write!(f, "buffer {buffer} is {} and still being written", state.name())
            }
        }
    }
}

/// A buffer that overstayed its state's timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stuck {
    pub buffer: usize,
    pub state: State,
    /// When it entered the state.
    pub since: u32,
    /// How long it has been there.
    pub age: u32,
}

/// Longest stay in each busy state, in the caller's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    pub camera_filling: u32,
    pub infer_running: u32,
    pub postprocessing: u32,
    pub upload_pending: u32,
}

impl Timeouts {
    fn of(&self, state: State) -> Option<u32> {
        match state {
            State::Free => None,
            State::CameraFilling => Some(self.camera_filling),
            State::InferRunning => Some(self.infer_running),
            State::Postprocessing => Some(self.postprocessing),
            State::UploadPending => Some(self.upload_pending),
        }
    }
}

/// `N` managed buffers.
#[derive(Debug)]
pub struct Buffers<const N: usize> {
    state: [State; N],
    entered: [u32; N],
    /// Held by an asynchronous writer.
    writing: [bool; N],
    transitions: u32,
}

impl<const N: usize> Default for Buffers<N> {
    fn default() -> Self {
        Buffers { state: [State::Free; N], entered: [0; N], writing: [false; N], transitions: 0 }
    }
}

impl<const N: usize> Buffers<N> {
    /// A FREE buffer, now CAMERA_FILLING.
    pub fn acquire(&mut self, now: u32) -> Result<usize, LifecycleError> {
        let buffer = self.state.iter().position(|&s| s == State::Free).ok_or(LifecycleError::NoneFree)?;
        self.advance(buffer, State::CameraFilling, now)?;
        Ok(buffer)
    }

    /// A FREE buffer, now CAMERA_FILLING and held by an asynchronous writer
    /// until [`Buffers::written`].
    pub fn acquire_for_writer(&mut self, now: u32) -> Result<usize, LifecycleError> {
        let buffer = self.acquire(now)?;
        self.writing[buffer] = true;
        Ok(buffer)
    }

    /// The asynchronous writer has finished filling `buffer`.
    pub fn written(&mut self, buffer: usize) {
        if let Some(writing) = self.writing.get_mut(buffer) {
            *writing = false;
        }
    }

    /// Whether an asynchronous writer holds `buffer`.
    pub fn is_writing(&self, buffer: usize) -> bool {
        self.writing.get(buffer).copied().unwrap_or(false)
    }

    /// Moves `buffer` to `to`, which must be the next state of its cycle,
    /// and out of CAMERA_FILLING only once its writer has finished.
    pub fn advance(&mut self, buffer: usize, to: State, now: u32) -> Result<(), LifecycleError> {
        let from = *self.state.get(buffer).ok_or(LifecycleError::NoSuchBuffer(buffer))?;
        if !cfg!(feature = "unchecked") {
            if from.next() != to {
                return Err(LifecycleError::Illegal { buffer, from, to });
            }
            if self.writing[buffer] {
                return Err(LifecycleError::Writing { buffer, state: from });
            }
        }
        self.state[buffer] = to;
        self.entered[buffer] = now;
        if cfg!(feature = "instrument") {
            self.transitions += 1;
        }
        Ok(())
    }

    pub fn state(&self, buffer: usize) -> State {
        self.state[buffer]
    }

    /// Buffers that are not FREE.
    pub fn in_use(&self) -> usize {
        self.state.iter().filter(|&&s| s != State::Free).count()
    }

    /// When `buffer` entered its current state.
    pub fn entered(&self, buffer: usize) -> u32 {
        self.entered[buffer]
    }

    /// Transitions made so far.
    pub fn transitions(&self) -> u32 {
        self.transitions
    }

    /// The buffer that has overstayed its state the longest, if any.
    pub fn stuck(&self, now: u32, timeouts: &Timeouts) -> Option<Stuck> {
        (0..N)
            .filter_map(|buffer| {
                let state = self.state[buffer];
                let since = self.entered[buffer];
                let age = now.wrapping_sub(since);
                (age > timeouts.of(state)?).then_some(Stuck { buffer, state, since, age })
            })
            .max_by_key(|s| s.age)
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::string::ToString;

    const ALL: [State; 5] =
        [State::Free, State::CameraFilling, State::InferRunning, State::Postprocessing, State::UploadPending];
    const TIMEOUTS: Timeouts = Timeouts { camera_filling: 5, infer_running: 10, postprocessing: 5, upload_pending: 20 };

    /// A buffer put into `state` by legal steps.
    fn at(state: State) -> Buffers<1> {
        let mut b = Buffers::<1>::default();
        let mut t = 0;
        while b.state(0) != state {
            t += 1;
            let next = b.state(0).next();
            b.advance(0, next, t).unwrap();
        }
        b
    }

    #[test]
    fn every_legal_transition_is_taken_and_timestamped() {
        let mut b = Buffers::<1>::default();
        assert_eq!(b.acquire(100), Ok(0));
        assert_eq!((b.state(0), b.entered(0)), (State::CameraFilling, 100));
        b.advance(0, State::InferRunning, 101).unwrap();
        b.advance(0, State::Postprocessing, 105).unwrap();
        b.advance(0, State::UploadPending, 106).unwrap();
        b.advance(0, State::Free, 130).unwrap();
        assert_eq!((b.state(0), b.entered(0)), (State::Free, 130));
        assert_eq!(b.transitions(), 5);
    }

    #[test]
    fn every_illegal_transition_is_rejected_and_changes_nothing() {
        for from in ALL {
            for to in ALL {
                if to == from.next() {
                    continue;
                }
                let mut b = at(from);
                let before = (b.state(0), b.entered(0), b.transitions());
                assert_eq!(
                    b.advance(0, to, 999),
                    Err(LifecycleError::Illegal { buffer: 0, from, to }),
                    "{from:?} -> {to:?}"
                );
                assert_eq!((b.state(0), b.entered(0), b.transitions()), before);
            }
        }
        assert_eq!(Buffers::<1>::default().advance(3, State::CameraFilling, 0), Err(LifecycleError::NoSuchBuffer(3)));
    }

    #[test]
    fn a_busy_buffer_is_never_handed_out() {
        let mut b = Buffers::<2>::default();
        let first = b.acquire(0).unwrap();
        let second = b.acquire(0).unwrap();
        assert_ne!(first, second);
        assert_eq!(b.acquire(1), Err(LifecycleError::NoneFree));
        for state in [State::InferRunning, State::Postprocessing, State::UploadPending] {
            b.advance(first, state, 2).unwrap();
            assert_eq!(b.acquire(3), Err(LifecycleError::NoneFree), "while {state:?}");
        }
        b.advance(first, State::Free, 4).unwrap();
        assert_eq!(b.acquire(5), Ok(first));
    }

    #[test]
    fn a_buffer_its_writer_still_holds_stays_camera_filling() {
        let mut b = Buffers::<2>::default();
        let held = b.acquire_for_writer(7).unwrap();
        assert!(b.is_writing(held));
        assert_eq!(b.in_use(), 1);
        assert_eq!(
            b.advance(held, State::InferRunning, 8),
            Err(LifecycleError::Writing { buffer: held, state: State::CameraFilling })
        );
        assert_eq!((b.state(held), b.entered(held), b.transitions()), (State::CameraFilling, 7, 1));
        // The other buffer is not held.
        let other = b.acquire(8).unwrap();
        assert!(!b.is_writing(other));
        b.advance(other, State::InferRunning, 9).unwrap();
        b.written(held);
        assert!(!b.is_writing(held));
        b.advance(held, State::InferRunning, 10).unwrap();
        assert_eq!(b.in_use(), 2);
        assert_eq!(
            LifecycleError::Writing { buffer: 1, state: State::CameraFilling }.to_string(),
            "buffer 1 is CAMERA_FILLING and still being written"
        );
    }

    #[test]
    fn a_buffer_past_its_timeout_is_reported() {
        let mut b = Buffers::<2>::default();
        b.acquire(0).unwrap();
        assert_eq!(b.stuck(5, &TIMEOUTS), None, "exactly at the timeout is not late");
        assert_eq!(b.stuck(6, &TIMEOUTS), Some(Stuck { buffer: 0, state: State::CameraFilling, since: 0, age: 6 }));
        b.advance(0, State::InferRunning, 6).unwrap();
        assert_eq!(b.stuck(16, &TIMEOUTS), None);
        b.acquire(10).unwrap();
        // Both late: the one late the longest is reported.
        let stuck = b.stuck(40, &TIMEOUTS).unwrap();
        assert_eq!((stuck.buffer, stuck.age), (0, 34));
        // A FREE buffer is never stuck, however long it waits.
        assert_eq!(Buffers::<1>::default().stuck(u32::MAX, &TIMEOUTS), None);
        // The clock may wrap.
        let mut w = Buffers::<1>::default();
        w.acquire(u32::MAX - 1).unwrap();
        assert_eq!(w.stuck(2, &TIMEOUTS), None);
        assert_eq!(w.stuck(4, &TIMEOUTS).unwrap().age, 6);
    }
}

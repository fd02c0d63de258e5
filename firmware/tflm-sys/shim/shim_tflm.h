// The TFLM headers the shim includes first, for every TFLM API hilmem
// builds (the `HM_*` macros of `shim.cc`). The build script precompiles this
// header once per toolchain and variant; a shim compiled over it (one per
// model resolver) is the object compiled without it, in a fraction of the
// time: TFLM's headers, its flatbuffer schema above all, are most of the
// shim's compile time.
//
// A guard, not `#pragma once`: the build includes a copy of this file, kept
// beside its precompiled form, before `shim.cc` includes this one.
#ifndef HILMEM_SHIM_TFLM_H_
#define HILMEM_SHIM_TFLM_H_

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <new>

#include "flatbuffers/flatbuffers.h"
// Each `HM_*_H` names the header of the tree that declares that part of
// TFLM's API, wherever it lives (`Api::of` in `tree.rs`).
#include HM_INTERPRETER_H
#include HM_OP_RESOLVER_H
#include HM_SCHEMA_H
#include HM_SCHEMA_VERSION_H
#include HM_DEBUG_LOG_H
#ifdef HM_PRINTF_H
#include HM_PRINTF_H
#endif
#ifdef HM_ERROR_REPORTER_H
#include HM_ERROR_REPORTER_H
#endif
#ifdef HM_ARENA_ALLOCATOR
#include HM_ALLOCATOR_H
#include HM_ARENA_ALLOCATOR_H
#include HM_MEMORY_HELPERS_H
#ifdef HM_ARENA_CONSTANTS_H
#include HM_ARENA_CONSTANTS_H
#define HM_BUFFER_ALIGNMENT tflite::MicroArenaBufferAlignment()
#endif
using ArenaAllocator = tflite::HM_ARENA_ALLOCATOR;
#ifdef HM_PLANNER_GIVEN
#include HM_GREEDY_PLANNER_H
#endif
#ifdef HILMEM_TFLM_RECORDING
#include HM_RECORDING_ALLOCATOR_H
#endif
#else
#include HM_REGISTRATIONS_H
#endif

#endif  // HILMEM_SHIM_TFLM_H_

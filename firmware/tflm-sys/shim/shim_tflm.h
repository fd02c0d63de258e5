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
#include "tensorflow/lite/micro/micro_interpreter.h"
#include "tensorflow/lite/micro/micro_mutable_op_resolver.h"
#include "tensorflow/lite/schema/schema_generated.h"
#include "tensorflow/lite/micro/debug_log.h"
#ifdef HM_VERSION_H
#include "tensorflow/lite/version.h"
#endif
#ifdef HM_MICRO_LOG
#include "tensorflow/lite/micro/micro_log.h"
#endif
#if defined(HM_ERROR_REPORTER) || !defined(HM_MICRO_LOG)
#include "tensorflow/lite/micro/micro_error_reporter.h"
#endif
#ifdef HM_PLANNER_GIVEN
#ifndef HM_BUFFER_ALIGNMENT
#include "tensorflow/lite/micro/micro_arena_constants.h"
#define HM_BUFFER_ALIGNMENT tflite::MicroArenaBufferAlignment()
#endif
#include "tensorflow/lite/micro/memory_helpers.h"
#include "tensorflow/lite/micro/memory_planner/greedy_memory_planner.h"
#include "tensorflow/lite/micro/micro_allocator.h"
#ifdef HM_SINGLE_ARENA_BUFFER
#include "tensorflow/lite/micro/arena_allocator/single_arena_buffer_allocator.h"
using ArenaAllocator = tflite::SingleArenaBufferAllocator;
#else
#include "tensorflow/lite/micro/simple_memory_allocator.h"
using ArenaAllocator = tflite::SimpleMemoryAllocator;
#endif
#ifdef HILMEM_TFLM_RECORDING
#include "tensorflow/lite/micro/recording_micro_allocator.h"
#endif
#else
#include "tensorflow/lite/micro/kernels/micro_ops.h"
#endif

#endif  // HILMEM_SHIM_TFLM_H_

// The C interface to TFLM that the Rust side links against.
//
// One interpreter exists at a time. It, its op resolver and its error reporter
// are constructed with placement new in static storage, so the firmware needs
// no heap and no static constructors.

#include <stdint.h>
#include <new>

#include "flatbuffers/flatbuffers.h"
#include "tensorflow/lite/micro/kernels/all_ops_resolver.h"
#include "tensorflow/lite/micro/micro_error_reporter.h"
#include "tensorflow/lite/micro/micro_interpreter.h"
#include "tensorflow/lite/schema/schema_generated.h"
#include "tensorflow/lite/version.h"

extern "C" {

enum {
  HM_OK = 0,
  HM_ERR_VERIFY = 1,
  HM_ERR_SCHEMA = 2,
  HM_ERR_INIT = 3,
  HM_ERR_ALLOCATE = 4,
  HM_ERR_INVOKE = 5,
  HM_ERR_NO_TENSOR = 6,
  HM_ERR_NOT_LOADED = 7,
};

#define HM_MAX_DIMS 6

typedef struct {
  void* data;
  uint32_t bytes;
  int32_t type;
  int32_t rank;
  int32_t dims[HM_MAX_DIMS];
  float scale;
  int32_t zero_point;
} hm_tensor;

}  // extern "C"

namespace {

template <class T>
struct Slot {
  alignas(T) uint8_t bytes[sizeof(T)];
  T* get() { return reinterpret_cast<T*>(bytes); }
};

Slot<tflite::MicroErrorReporter> reporter_slot;
Slot<tflite::ops::micro::AllOpsResolver> resolver_slot;
Slot<tflite::MicroInterpreter> interpreter_slot;
tflite::ErrorReporter* reporter = nullptr;
tflite::ops::micro::AllOpsResolver* resolver = nullptr;
tflite::MicroInterpreter* interpreter = nullptr;
bool allocated = false;

int32_t describe(TfLiteTensor* t, hm_tensor* out) {
  if (t == nullptr) return HM_ERR_NO_TENSOR;
  out->data = t->data.raw;
  out->bytes = static_cast<uint32_t>(t->bytes);
  out->type = static_cast<int32_t>(t->type);
  out->rank = t->dims == nullptr ? 0 : t->dims->size;
  for (int i = 0; i < HM_MAX_DIMS; ++i) {
    out->dims[i] = i < out->rank ? t->dims->data[i] : 0;
  }
  out->scale = t->params.scale;
  out->zero_point = t->params.zero_point;
  return HM_OK;
}

}  // namespace

extern "C" {

// Verifies the flatbuffer, builds the interpreter over `arena` and allocates
// its tensors. Any previous interpreter is destroyed first.
int32_t hm_tflm_load(const uint8_t* model_data, uint32_t model_len,
                     uint8_t* arena, uint32_t arena_len) {
  if (interpreter != nullptr) {
    interpreter->~MicroInterpreter();
    interpreter = nullptr;
  }
  allocated = false;
  if (reporter == nullptr) {
    reporter = new (reporter_slot.bytes) tflite::MicroErrorReporter();
    resolver = new (resolver_slot.bytes) tflite::ops::micro::AllOpsResolver();
  }

  flatbuffers::Verifier verifier(model_data, model_len);
  if (!tflite::VerifyModelBuffer(verifier)) return HM_ERR_VERIFY;
  const tflite::Model* model = tflite::GetModel(model_data);
  if (model->version() != TFLITE_SCHEMA_VERSION) return HM_ERR_SCHEMA;

  interpreter = new (interpreter_slot.bytes)
      tflite::MicroInterpreter(model, *resolver, arena, arena_len, reporter);
  if (interpreter->initialization_status() != kTfLiteOk) return HM_ERR_INIT;
  if (interpreter->AllocateTensors() != kTfLiteOk) return HM_ERR_ALLOCATE;
  allocated = true;
  return HM_OK;
}

int32_t hm_tflm_invoke(void) {
  if (!allocated) return HM_ERR_NOT_LOADED;
  return interpreter->Invoke() == kTfLiteOk ? HM_OK : HM_ERR_INVOKE;
}

// Bytes of the arena that TFLM's allocator has handed out (head plus tail);
// valid only after a successful load.
uint32_t hm_tflm_arena_used_bytes(void) {
  return allocated ? static_cast<uint32_t>(interpreter->arena_used_bytes()) : 0;
}

uint32_t hm_tflm_tensors(void) {
  return allocated ? static_cast<uint32_t>(interpreter->tensors_size()) : 0;
}

// Any tensor of the model, by index: where TFLM put its data (in the arena,
// or in the model for constants).
int32_t hm_tflm_tensor(uint32_t index, hm_tensor* out) {
  if (!allocated) return HM_ERR_NOT_LOADED;
  if (index >= interpreter->tensors_size()) return HM_ERR_NO_TENSOR;
  return describe(interpreter->tensor(index), out);
}

uint32_t hm_tflm_inputs(void) {
  return allocated ? static_cast<uint32_t>(interpreter->inputs_size()) : 0;
}

uint32_t hm_tflm_outputs(void) {
  return allocated ? static_cast<uint32_t>(interpreter->outputs_size()) : 0;
}

int32_t hm_tflm_input(uint32_t index, hm_tensor* out) {
  if (!allocated) return HM_ERR_NOT_LOADED;
  if (index >= interpreter->inputs_size()) return HM_ERR_NO_TENSOR;
  return describe(interpreter->input(index), out);
}

int32_t hm_tflm_output(uint32_t index, hm_tensor* out) {
  if (!allocated) return HM_ERR_NOT_LOADED;
  if (index >= interpreter->outputs_size()) return HM_ERR_NO_TENSOR;
  return describe(interpreter->output(index), out);
}

int32_t hm_tflm_schema_version(void) { return TFLITE_SCHEMA_VERSION; }

}  // extern "C"

#ifdef HILMEM_BARE_METAL
// The C++ runtime that TFLM needs on bare metal. Nothing allocates: a call to
// operator new is a bug and ends the run through the firmware's fatal handler.
extern "C" void hm_cxx_fatal(const char* what);

void* operator new(size_t) { hm_cxx_fatal("operator new"); return nullptr; }
void* operator new[](size_t) { hm_cxx_fatal("operator new[]"); return nullptr; }
void operator delete(void*) noexcept {}
void operator delete(void*, size_t) noexcept {}
void operator delete[](void*) noexcept {}
void operator delete[](void*, size_t) noexcept {}
extern "C" void __cxa_pure_virtual() { hm_cxx_fatal("pure virtual call"); }
void* __dso_handle = nullptr;
#endif

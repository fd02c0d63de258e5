// A bare-metal firmware around a TFLM library built by TFLM's own Makefile:
// it loads one model (MODEL_FILE, put in flash with .incbin), allocates its
// tensors in a static arena, runs one inference on a zeroed input and
// prints what TFLM reports of the arena over semihosting. hilmem's firmware
// is not involved, so its figures check hilmem's build of TFLM.
#include <stddef.h>
#include <stdint.h>

#include "tensorflow/lite/micro/micro_interpreter.h"
#include "tensorflow/lite/micro/micro_mutable_op_resolver.h"
#include "tensorflow/lite/schema/schema_generated.h"

#define STR2(x) #x
#define STR(x) STR2(x)

asm(".section .rodata\n"
    ".balign 16\n"
    ".global model_data\n"
    "model_data:\n"
    ".incbin \"" STR(MODEL_FILE) "\"\n"
    ".text\n");
extern "C" const unsigned char model_data[];

namespace {
constexpr size_t kArenaBytes = 128 * 1024;
alignas(16) uint8_t arena[kArenaBytes];

// ARM semihosting: SYS_WRITE0 prints a string, SYS_EXIT ends QEMU.
int semihost(int op, const void* arg) {
  register int r0 asm("r0") = op;
  register const void* r1 asm("r1") = arg;
  asm volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
  return r0;
}

void print(const char* s) { semihost(0x04, s); }

void print_number(const char* label, long value) {
  char digits[24];
  char* p = digits + sizeof(digits) - 1;
  *p = '\0';
  bool negative = value < 0;
  unsigned long v = negative ? -value : value;
  do {
    *--p = '0' + v % 10;
    v /= 10;
  } while (v);
  if (negative) *--p = '-';
  print(label);
  print(p);
  print("\n");
}

[[noreturn]] void exit_with(int code) {
  // ADP_Stopped_ApplicationExit, then the code (SYS_EXIT_EXTENDED's block).
  static uint32_t block[2];
  block[0] = 0x20026;
  block[1] = code;
  semihost(0x20, block);
  for (;;) {
  }
}
}  // namespace

int main() {
  const tflite::Model* model = tflite::GetModel(model_data);
  // The operators of hello_world_int8, person_detect and keyword_scrambled.
  tflite::MicroMutableOpResolver<10> resolver;
  resolver.AddFullyConnected();
  resolver.AddConv2D();
  resolver.AddDepthwiseConv2D();
  resolver.AddAveragePool2D();
  resolver.AddReshape();
  resolver.AddSoftmax();
  resolver.AddSvdf();
  resolver.AddQuantize();
  resolver.AddDequantize();
  tflite::MicroInterpreter interpreter(model, resolver, arena, kArenaBytes);
  if (interpreter.AllocateTensors() != kTfLiteOk) {
    print("AllocateTensors failed\n");
    exit_with(1);
  }
  TfLiteTensor* input = interpreter.input(0);
  for (size_t i = 0; i < input->bytes; i++) input->data.raw[i] = 0;
  if (interpreter.Invoke() != kTfLiteOk) {
    print("Invoke failed\n");
    exit_with(1);
  }
  print_number("arena_used_bytes ", interpreter.arena_used_bytes());
  exit_with(0);
}

// Startup: the vector table, .data copied and .bss zeroed, the FPU on,
// C++ constructors, main.
extern "C" {
extern uint32_t _sidata, _sdata, _edata, _sbss, _ebss, _estack;
extern void (*__init_array_start[])(void);
extern void (*__init_array_end[])(void);

[[noreturn]] void Reset_Handler(void) {
  for (uint32_t *src = &_sidata, *dst = &_sdata; dst < &_edata;) *dst++ = *src++;
  for (uint32_t* dst = &_sbss; dst < &_ebss;) *dst++ = 0;
  volatile uint32_t* cpacr = reinterpret_cast<volatile uint32_t*>(0xE000ED88);
  *cpacr |= 0xFu << 20;
  asm volatile("dsb\n isb");
  for (auto f = __init_array_start; f < __init_array_end; f++) (*f)();
  main();
  exit_with(0);
}

[[noreturn]] void Fault_Handler(void) {
  print("fault\n");
  exit_with(2);
}

__attribute__((section(".isr_vector"), used)) const void* const vectors[16] = {
    &_estack,
    reinterpret_cast<const void*>(Reset_Handler),
    reinterpret_cast<const void*>(Fault_Handler),
    reinterpret_cast<const void*>(Fault_Handler),
    reinterpret_cast<const void*>(Fault_Handler),
    reinterpret_cast<const void*>(Fault_Handler),
    reinterpret_cast<const void*>(Fault_Handler),
};
}

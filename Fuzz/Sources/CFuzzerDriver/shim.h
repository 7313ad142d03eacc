// libFuzzer's entry for programs that have their own main (compiler-rt's FuzzerInterface.h), linked from
// the Swift toolchain's libclang_rt.fuzzer by -sanitize=fuzzer.
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*UserCb)(const uint8_t *Data, size_t Size));

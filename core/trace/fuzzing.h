#pragma once
// The reader's one switch for fuzzing (a header of its own: reader.h is
// included nearly everywhere, this only by the reader and fuzz/*.cpp).

namespace hookscope::trace {

// Note [Fuzzing skips checksums]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Every block carries a CRC-32, so a mutated input would almost always stop
// at "bad checksum" and never reach the decoders. The fuzz targets (fuzz/*.cpp)
// call this once, in LLVMFuzzerInitialize, and from then on this process's
// reader ignores checksum mismatches; every other check still runs. A runtime
// switch, not a compile-time macro, so that the sanitizer build compiles the
// reader once for its tests (which check that checksums catch damage) and for
// the fuzzers (Note [One sanitizer build], fuzz/CMakeLists.txt). Nothing else
// may call it.
void skip_checksums_for_fuzzing();

}  // namespace hookscope::trace

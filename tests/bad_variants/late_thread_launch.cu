// Bad variant, L1_020 (the 2026-12-07 review): host_thread_launch's trick with a 5 us wait, so
// that the thread's launch lands on the job stream just behind the executor's end event and ahead
// of whatever the executor enqueues after it (host_thread_launch.h).
// Why the executor missed it in untraced rounds: its checks after the call (the input hash, the
// compare) ran on the job stream, behind the late work, and found the output complete.
// What catches it: the CUDA device copies the custom's output for the checks on a stream of its
// own the moment the end event passes (the copy is enqueued before the gate opens), so the late
// work is not done when the output is taken: non_finite; work still queued on the job stream once
// the copy is done: foreign_stream. A traced round: foreign_stream (another thread's launch).
#include "tests/bad_variants/host_thread_launch.h"

KB_REGISTER_IMPLEMENTATION(L1_020, custom, kb::bad::HostThreadLaunch<5>)

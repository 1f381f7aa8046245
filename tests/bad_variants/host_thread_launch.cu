// Bad variant, L3_013 (issue 12, trick 3c): honest for the first kUntimedCalls calls; after them
// run() only hands the call's tensors to a host thread of its own and returns
// (host_thread_launch.h). The thread waits 200 us, so that the executor has recorded its end event,
// then enqueues the work on the job stream itself. Why the old harness missed it: trial 0 alone was
// traced, and it was honest; each timed call bracketed nothing (the work landed on the job stream
// after the end event), so the custom was timed at ~0, and by the check after timing the thread's
// last work had long finished. What catches it: launch accounting over every timed call. The work
// was launched by a thread other than the caller's, and it ends after the call's end event.
// Expected: foreign_stream.
#include "tests/bad_variants/host_thread_launch.h"

KB_REGISTER_IMPLEMENTATION(L3_013, custom, kb::bad::HostThreadLaunch<200>)

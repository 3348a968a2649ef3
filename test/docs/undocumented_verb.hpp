// A fixture for async_verbs_documented.py: a verb that lacks two of its five paragraphs, so that the
// check is shown to fail when it should (the ctest async_verbs_check_fails_on_a_gap expects it to).
#pragma once

struct example {
    /**
     * Waits for something.
     *
     * @par Executor
     * Any.
     * @par Per-operation cancellation
     * None.
     * @par Errors
     * None.
     */
    template <class CompletionToken>
    auto async_wait_for_something(CompletionToken&& token);
};

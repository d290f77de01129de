/* A tiny dependency-free test harness (libuv style): each test is a function,
 * asserts print both operands and the location, and the run ends with the line
 * "N passed, N failed" that CI reads. */
#ifndef LLMPLAN_TEST_HARNESS_H
#define LLMPLAN_TEST_HARNESS_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct th_case {
    const char *name;
    void (*fn)(int *failed);
};

#define TEST(name) static void test_##name(int *th_failed_)
#define TH_CASE(name)                                                                              \
    {                                                                                              \
#name, test_##name                                                                         \
    }

#define TH_FAIL_(...)                                                                              \
    do {                                                                                           \
        fprintf(stderr, "  %s:%d: ", __FILE__, __LINE__);                                          \
        fprintf(stderr, __VA_ARGS__);                                                              \
        fprintf(stderr, "\n");                                                                     \
        *th_failed_ = 1;                                                                           \
        return;                                                                                    \
    } while (0)

#define ASSERT_TRUE(c)                                                                             \
    do {                                                                                           \
        if (!(c)) TH_FAIL_("expected true: %s", #c);                                               \
    } while (0)
#define ASSERT_EQ_INT(a, b)                                                                        \
    do {                                                                                           \
        long long th_a_ = (long long)(a), th_b_ = (long long)(b);                                  \
        if (th_a_ != th_b_) TH_FAIL_("%s == %s: %lld != %lld", #a, #b, th_a_, th_b_);              \
    } while (0)
#define ASSERT_EQ_STR(a, b)                                                                        \
    do {                                                                                           \
        const char *th_a_ = (a), *th_b_ = (b);                                                     \
        if (!th_a_ || !th_b_ || strcmp(th_a_, th_b_) != 0)                                         \
            TH_FAIL_("%s == %s: \"%s\" != \"%s\"", #a, #b, th_a_ ? th_a_ : "(null)",               \
                     th_b_ ? th_b_ : "(null)");                                                    \
    } while (0)
#define ASSERT_CONTAINS(hay, needle)                                                               \
    do {                                                                                           \
        const char *th_h_ = (hay), *th_n_ = (needle);                                              \
        if (!th_h_ || !strstr(th_h_, th_n_))                                                       \
            TH_FAIL_("\"%s\" does not contain \"%s\"", th_h_ ? th_h_ : "(null)", th_n_);           \
    } while (0)
/* Relative tolerance (absolute when the expected value is 0). */
#define ASSERT_NEAR(a, b, rel)                                                                     \
    do {                                                                                           \
        double th_a_ = (double)(a), th_b_ = (double)(b);                                           \
        double th_d_ = fabs(th_a_ - th_b_), th_s_ = fabs(th_b_) > 0 ? fabs(th_b_) : 1.0;           \
        if (!(th_d_ <= (rel)*th_s_))                                                               \
            TH_FAIL_("%s ~= %s (rel %g): %.9g vs %.9g", #a, #b, (double)(rel), th_a_, th_b_);      \
    } while (0)
#define ASSERT_OK(call)                                                                            \
    do {                                                                                           \
        int th_rc_ = (call);                                                                       \
        if (th_rc_ != 0) TH_FAIL_("%s returned %d", #call, th_rc_);                                \
    } while (0)

static inline int th_run(const struct th_case *cases, int n, int argc, char **argv)
{
    int passed = 0, failed = 0;
    for (int i = 0; i < n; i++) {
        if (argc > 1 && strcmp(argv[1], cases[i].name) != 0) continue;
        int f = 0;
        cases[i].fn(&f);
        printf("%s %s\n", f ? "FAIL" : "ok  ", cases[i].name);
        if (f)
            failed++;
        else
            passed++;
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}

#define TH_MAIN(...)                                                                               \
    int main(int argc, char **argv)                                                                \
    {                                                                                              \
        static const struct th_case th_cases_[] = {__VA_ARGS__};                                   \
        return th_run(th_cases_, (int)(sizeof(th_cases_) / sizeof(th_cases_[0])), argc, argv);     \
    }

#endif

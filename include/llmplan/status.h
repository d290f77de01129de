/* Status codes and the error record every fallible llmplan function fills.
 *
 * Fallible functions return an int: LP_OK (0) or a negative LP_E* code. The
 * message and a short traceback (file:line of each frame the error passed
 * through) go into a caller-owned struct lp_err, which is passed explicitly:
 * the library keeps no global error state, never prints and never exits. */
#ifndef LLMPLAN_STATUS_H
#define LLMPLAN_STATUS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum lp_status {
    LP_OK = 0,
    LP_ENOMEM = -1,     /* allocation failed */
    LP_EIO = -2,        /* file missing, unreadable or unwritable */
    LP_EPARSE = -3,     /* malformed JSON / CSV */
    LP_EINVAL = -4,     /* well-formed input with a bad value, type or key */
    LP_ENOTFOUND = -5,  /* a name that is not a preset */
    LP_EHDF5 = -6,      /* HDF5 library error */
    LP_EMPI = -7,       /* MPI library error */
    LP_ECUDA = -8,      /* CUDA / cuBLAS / cuDNN error */
    LP_ENCCL = -9,      /* NCCL error */
    LP_EFORMAT = -10,   /* a file of the wrong version, schema or checksum */
    LP_EINTERRUPT = -11 /* stopped by a signal (checkpoint written) */
};

#define LP_ERR_MSG 512
#define LP_ERR_DEPTH 8

struct lp_err_frame {
    const char *file;
    int line;
};

struct lp_err {
    int code;
    char msg[LP_ERR_MSG];
    int depth;
    struct lp_err_frame frame[LP_ERR_DEPTH];
};

/* Short name of a status code ("LP_EIO"). Never NULL. */
const char *lp_status_name(int code);

/* Record an error: code, printf-style message, and the frame it was raised in.
 * Returns code so that callers can write `return lp_err_set(...)`. err may be
 * NULL (the error is then only returned). */
int lp_err_set_at(struct lp_err *err, int code, const char *file, int line, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

/* Append a traceback frame as the error passes through a caller. */
void lp_err_trace(struct lp_err *err, const char *file, int line);

/* Reset to "no error". */
void lp_err_clear(struct lp_err *err);

/* Format "msg\n  at file:line\n ..." into buf (always NUL-terminated). */
void lp_err_format(const struct lp_err *err, char *buf, size_t len, int with_trace);

#define LP_FAIL(err, code, ...) return lp_err_set_at((err), (code), __FILE__, __LINE__, __VA_ARGS__)

/* Propagate-and-trace: evaluate a call returning a status; on failure record
 * this frame and return the code from the enclosing function. */
#define LP_TRY(err, call)                                                                          \
    do {                                                                                           \
        int lp_rc_ = (call);                                                                       \
        if (lp_rc_ < 0) {                                                                          \
            lp_err_trace((err), __FILE__, __LINE__);                                               \
            return lp_rc_;                                                                         \
        }                                                                                          \
    } while (0)

/* Same, but jump to a cleanup label with the code in rc (functions that own
 * several resources have one `cleanup:` exit). */
#define LP_TRY_GOTO(err, rc, call, label)                                                          \
    do {                                                                                           \
        (rc) = (call);                                                                             \
        if ((rc) < 0) {                                                                            \
            lp_err_trace((err), __FILE__, __LINE__);                                               \
            goto label;                                                                            \
        }                                                                                          \
    } while (0)

#ifdef __cplusplus
}
#endif

#endif

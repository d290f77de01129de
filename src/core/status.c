/* Error records: message + traceback, no global state. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "llmplan/status.h"

const char *lp_status_name(int code)
{
    switch (code) {
    case LP_OK:
        return "LP_OK";
    case LP_ENOMEM:
        return "LP_ENOMEM";
    case LP_EIO:
        return "LP_EIO";
    case LP_EPARSE:
        return "LP_EPARSE";
    case LP_EINVAL:
        return "LP_EINVAL";
    case LP_ENOTFOUND:
        return "LP_ENOTFOUND";
    case LP_EHDF5:
        return "LP_EHDF5";
    case LP_EMPI:
        return "LP_EMPI";
    case LP_ECUDA:
        return "LP_ECUDA";
    case LP_ENCCL:
        return "LP_ENCCL";
    case LP_EFORMAT:
        return "LP_EFORMAT";
    case LP_EINTERRUPT:
        return "LP_EINTERRUPT";
    default:
        return "LP_E?";
    }
}

void lp_err_clear(struct lp_err *err)
{
    if (!err) return;
    memset(err, 0, sizeof(*err));
}

void lp_err_trace(struct lp_err *err, const char *file, int line)
{
    if (!err || err->depth >= LP_ERR_DEPTH) return;
    err->frame[err->depth].file = file;
    err->frame[err->depth].line = line;
    err->depth++;
}

int lp_err_set_at(struct lp_err *err, int code, const char *file, int line, const char *fmt, ...)
{
    if (!err) return code;
    err->code = code;
    err->depth = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    lp_err_trace(err, file, line);
    return code;
}

void lp_err_format(const struct lp_err *err, char *buf, size_t len, int with_trace)
{
    if (!buf || len == 0) return;
    buf[0] = '\0';
    if (!err) return;
    size_t off =
        (size_t)snprintf(buf, len, "%s", err->msg[0] ? err->msg : lp_status_name(err->code));
    for (int i = 0; with_trace && i < err->depth && off < len; i++) {
        const char *f = strrchr(err->frame[i].file, '/');
        off += (size_t)snprintf(buf + off, len - off, "\n  at %s:%d",
                                f ? f + 1 : err->frame[i].file, err->frame[i].line);
    }
}

// render.c - in-process Graphviz layout and rendering (libgvc + libcgraph).
#include "tg/dot.h"
#include "dot-file.h"

#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>
#if defined(__has_include)
#if __has_include(<graphviz/graphviz_version.h>)
#include <graphviz/graphviz_version.h>
#endif
#endif

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Graphviz reports errors through its own callback; keep the last one so the
// caller gets a message instead of text on stderr.
static char gv_msg[512];
static int gv_error_cb(char * msg) {
    size_t n = strlen(gv_msg);
    if (n + 1 < sizeof(gv_msg)) snprintf(gv_msg + n, sizeof(gv_msg) - n, "%s", msg);
    return 0;
}

// One Graphviz context for the process, freed at exit: a context created after
// another was freed reads the first one's freed font cache (a use after free
// in the pango plugin on the second render), so the shell and the tests,
// which render more than once, share this one. Graphviz is not thread-safe;
// neither is this.
static GVC_t * gv_shared;
static void gv_free_shared(void) { if (gv_shared) gvFreeContext(gv_shared); gv_shared = NULL; }
static GVC_t * gv_context(void) {
    if (!gv_shared && (gv_shared = gvContext())) atexit(gv_free_shared);
    return gv_shared;
}

enum tg_status tg_dot_render(struct tg_dot * d, const char * format, const char * path) {
    if (!d || !format || !path) return tg_error(TG_ERR_INVALID_ARG, "dot: render needs a format and a path");
    size_t len;
    const char * text = tg_dot_text(d, &len);
    if (!text) return tg_last_status();
    gv_msg[0] = '\0';
    agseterrf(gv_error_cb);
    agseterr(AGERR);
    GVC_t * gvc = gv_context();
    if (!gvc) return tg_error(TG_ERR_NOMEM, "graphviz: cannot create a context");
    Agraph_t * g = agmemread(text);
    if (!g) {
        return tg_error(TG_ERR_INTERNAL, "graphviz: cannot parse the generated DOT: %s", gv_msg);
    }
    enum tg_status st = TG_OK;
    if (gvLayout(gvc, g, "dot") != 0) {
        st = tg_error(TG_ERR_INTERNAL, "graphviz: layout failed: %s", gv_msg);
    } else {
        // rendered into memory, then written by us: Graphviz's own file
        // output calls exit() when a write fails (a full disk)
        char * data = NULL;
        unsigned int n = 0;
        if (gvRenderData(gvc, g, format, &data, &n) != 0 || !data) {
            st = tg_error(TG_ERR_UNSUPPORTED, "graphviz: cannot render format '%s' (plugin missing?): %s", format, gv_msg);
        } else {
            char tmp[4096 + 32];
            FILE * f = tg_dot_file_open(path, tmp, sizeof(tmp));
            if (!f) {
                st = tg_last_status();
            } else {
                errno = 0;
                if (fwrite(data, 1, n, f) != n)
                    st = tg_error(TG_ERR_IO, "%s: write failed: %s (%s was not written)", path, strerror(errno ? errno : EIO), path);
                st = tg_dot_file_close(f, tmp, path, st);
            }
        }
        if (data) gvFreeRenderData(data);
        gvFreeLayout(gvc, g);
    }
    agclose(g);
    return st;
}

const char * tg_dot_graphviz_version(void) {
#ifdef PACKAGE_VERSION
    return PACKAGE_VERSION;
#else
    return "unknown";
#endif
}

// test_dot.c - the DOT builder and the in-process Graphviz renderer.
#include "check.h"
#include "tg/dot.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int count(const char * hay, const char * needle) {
    int c = 0;
    for (const char * p = hay; (p = strstr(p, needle)); p += strlen(needle)) c++;
    return c;
}

int main(void) {
    struct tg_dot * d = tg_dot_new("test");
    CHECK(d != NULL, "tg_dot_new");
    tg_dot_graph_attr(d, "rankdir", "TB");
    const char * f1[] = {"inp_embd", "GET_ROWS", "f32 [64,11]", "CPU@0x40"};
    const char * f2[] = {"weird {name} | <x> \"q\" \\", "MUL_MAT"};
    CHECK(tg_dot_cluster_begin(d, "split 0: CPU", "#dde8ff") == TG_OK, "cluster begin");
    CHECK(tg_dot_node(d, "n0", f1, 4, "#ffffff", NULL, NULL) == TG_OK, "record node");
    CHECK(tg_dot_node(d, "n1", f2, 2, NULL, NULL, "penwidth=2") == TG_OK, "node with record metacharacters");
    CHECK(tg_dot_cluster_end(d) == TG_OK, "cluster end");
    CHECK(tg_dot_cluster_end(d) != TG_OK, "unbalanced cluster_end is an error: %s", tg_last_error());
    CHECK(tg_dot_cluster_begin(d, "split 1: BLAS", "#ffe8d0") == TG_OK, "second cluster");
    const char * f3[] = {"kq-0", "MUL_MAT"};
    tg_dot_node(d, "n2", f3, 2, NULL, NULL, NULL);
    tg_dot_cluster_end(d);
    CHECK(tg_dot_edge(d, "n0", "n1", "src0", NULL) == TG_OK, "edge");
    tg_dot_edge(d, "n1", "n2", "src1", "style=dashed");
    CHECK(tg_dot_n_nodes(d) == 3 && tg_dot_n_edges(d) == 2 && tg_dot_n_clusters(d) == 2, "counts 3 nodes, 2 edges, 2 clusters");
    size_t len = 0;
    const char * text = tg_dot_text(d, &len);
    CHECK(text && strstr(text, "digraph") && strstr(text, "subgraph cluster_0"), "DOT text has digraph and clusters");
    CHECK(text && strstr(text, "weird \\{name\\} \\| \\<x\\> \\\"q\\\" \\\\"), "record metacharacters escaped");

    const char * svg_path = "test_dot.svg";
    enum tg_status st = tg_dot_save(d, svg_path);
    CHECK(st == TG_OK, "render SVG in-process (%s)", st == TG_OK ? "ok" : tg_last_error());
    size_t n = 0;
    char * svg = tg_test_read_file(svg_path, &n);
    CHECK(svg && strstr(svg, "<svg") && strstr(svg, "</svg>"), "SVG file has <svg> ... </svg> (%zu bytes)", n);
    if (svg) {
        CHECK(count(svg, "class=\"node\"") == 3, "SVG has 3 nodes (found %d)", count(svg, "class=\"node\""));
        CHECK(count(svg, "class=\"cluster\"") == 2, "SVG has 2 clusters (found %d)", count(svg, "class=\"cluster\""));
        CHECK(count(svg, "class=\"edge\"") == 2, "SVG has 2 edges");
        CHECK(strstr(svg, "weird {name} | &lt;x&gt; &quot;q&quot; \\") != NULL, "metacharacters shown literally in the SVG");
    }
    free(svg);
    CHECK(tg_dot_save(d, "out.xyz") == TG_ERR_INVALID_ARG, "unknown extension rejected: %s", tg_last_error());
    CHECK(tg_dot_save(d, "/nonexistent-dir/x.dot") == TG_ERR_IO, "unwritable path: %s", tg_last_error());
    CHECK(tg_dot_save(d, "test_dot.dot") == TG_OK, "write .dot");
    tg_dot_free(d);

    // names cut inside a UTF-8 character, stray bytes, control characters
    char buf[64];
    CHECK(!strcmp(tg_dot_escape_record("\xc3\xa9t\xc3\xa9\xc3", buf, sizeof(buf)), "\xc3\xa9t\xc3\xa9?"),
          "a character cut at the end becomes '?' (got '%s')", buf);
    CHECK(!strcmp(tg_dot_escape_record("a\x01" "b\x7f\xff\xfe\tc", buf, sizeof(buf)), "a?b????c"),
          "control characters and stray bytes become '?' (got '%s')", buf);
    CHECK(!strcmp(tg_dot_escape_record("\xe2\x82\xac\xe2\x82\xac", buf, 5), "\xe2\x82\xac"),
          "a short buffer cuts at a character boundary (got '%s')", buf);
    CHECK(!strcmp(tg_dot_escape_record("\xed\xa0\x80x\xc0\xafy", buf, sizeof(buf)), "???x??y"),
          "surrogates and overlong forms are not UTF-8 (got '%s')", buf);
    struct tg_dot * u = tg_dot_new("cut \xc3");
    const char * fu[] = {"ok \xc3\xa9 cut \xc3", "\x01\x02"};
    tg_dot_node(u, "n\xff", fu, 2, NULL, NULL, NULL);
    tg_dot_edge(u, "n\xff", "n\xff", "\xc3", NULL);
    const char * ut = tg_dot_text(u, NULL);
    bool valid = ut != NULL;
    for (const unsigned char * p = (const unsigned char *) (ut ? ut : ""); *p && valid; p++) {
        if (*p < 0x20 && *p != '\n') valid = false;
        if (*p == 0xc3) { valid = p[1] == 0xa9; p++; }
        else if (*p >= 0x80) valid = false;
    }
    CHECK(valid, "DOT text with cut names is valid UTF-8 without control bytes");
    CHECK(tg_dot_save(u, "test_dot_utf8.svg") == TG_OK, "it renders: %s", tg_last_error());
    tg_dot_free(u);
    return tg_check_finish("test_dot");
}

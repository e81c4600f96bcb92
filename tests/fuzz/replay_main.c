// replay_main.c - runs a fuzz harness over every file of a corpus directory
// (used when the build has no libFuzzer, so the corpus and every kept crash
// are regression tests). Usage: fuzz_X DIR_OR_FILE...
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size);

static int run_file(const char * path) {
    FILE * f = fopen(path, "rb");
    if (!f) { fprintf(stderr, "replay: cannot open %s\n", path); return 1; }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t * buf = malloc(n > 0 ? (size_t) n : 1);
    if (!buf || (n > 0 && fread(buf, 1, (size_t) n, f) != (size_t) n)) {
        fprintf(stderr, "replay: cannot read %s\n", path);
        fclose(f); free(buf); return 1;
    }
    fclose(f);
    LLVMFuzzerTestOneInput(buf, (size_t) n);
    free(buf);
    return 0;
}

int main(int argc, char ** argv) {
    int n_files = 0, n_err = 0;
    for (int a = 1; a < argc; a++) {
        struct stat st;
        if (stat(argv[a], &st) != 0) { fprintf(stderr, "replay: no such path %s\n", argv[a]); return 1; }
        if (!S_ISDIR(st.st_mode)) { n_err += run_file(argv[a]); n_files++; continue; }
        DIR * d = opendir(argv[a]);
        if (!d) { fprintf(stderr, "replay: cannot open dir %s\n", argv[a]); return 1; }
        struct dirent * e;
        while ((e = readdir(d))) {
            if (e->d_name[0] == '.') continue;
            char path[4096];
            snprintf(path, sizeof(path), "%s/%s", argv[a], e->d_name);
            n_err += run_file(path);
            n_files++;
        }
        closedir(d);
    }
    printf("replayed %d inputs without a crash\n", n_files);
    if (n_files == 0) { fprintf(stderr, "replay: empty corpus\n"); return 1; }
    return n_err ? 1 : 0;
}

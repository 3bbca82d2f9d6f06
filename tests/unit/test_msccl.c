/*
 * test_msccl.c - MSCCL XML export and import (synth/msccl).
 *
 *  - broken XML, one mutation of a small valid file each, and the exact
 *    error (status, file:line, what) each must produce;
 *  - the public algorithm files in ../shared/msccl/ (not copied into the
 *    project: their README asks for that) import, verify and simulate on a
 *    matching topology;
 *  - round trip: every algorithm x collective of the registry on three
 *    topologies: export, import, verify, simulate within 5% of the
 *    original at 64 KiB and 64 MiB;
 *  - export limits (a refusal naming the limit and the way out), in-place
 *    refusal, thread blocks per GPU (resident at once, 8-bit depid), NVLS
 *    refused, the algorithm directory for a tune result, the fuzz entry.
 */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "algo.h"
#include "msccl.h"
#include "sim.h"
#include "topo.h"
#include "tune.h"
#include "verify.h"
#include "harness.h"

/* A correct 2-GPU out-of-place allreduce: each reduces one chunk and
 * sends it back.  Line numbers matter to the expectations below. */
static const char base_xml[] =
"<algo name=\"t\" proto=\"Simple\" nchannels=\"1\" nchunksperloop=\"2\" "
"ngpus=\"2\" coll=\"allreduce\" inplace=\"0\" outofplace=\"1\" "
"minBytes=\"0\" maxBytes=\"0\">\n"                                   /* 1 */
"  <gpu id=\"0\" i_chunks=\"2\" o_chunks=\"2\" s_chunks=\"0\">\n"      /* 2 */
"    <tb id=\"0\" send=\"1\" recv=\"1\" chan=\"0\">\n"                 /* 3 */
"      <step s=\"0\" type=\"s\" srcbuf=\"i\" srcoff=\"1\" dstbuf=\"o\" "
"dstoff=\"1\" cnt=\"1\" depid=\"-1\" deps=\"-1\" hasdep=\"0\"/>\n"     /* 4 */
"      <step s=\"1\" type=\"rrc\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"o\" "
"dstoff=\"0\" cnt=\"1\" depid=\"-1\" deps=\"-1\" hasdep=\"0\"/>\n"     /* 5 */
"      <step s=\"2\" type=\"s\" srcbuf=\"o\" srcoff=\"0\" dstbuf=\"o\" "
"dstoff=\"0\" cnt=\"1\" depid=\"-1\" deps=\"-1\" hasdep=\"0\"/>\n"     /* 6 */
"      <step s=\"3\" type=\"r\" srcbuf=\"o\" srcoff=\"1\" dstbuf=\"o\" "
"dstoff=\"1\" cnt=\"1\" depid=\"-1\" deps=\"-1\" hasdep=\"0\"/>\n"     /* 7 */
"    </tb>\n"                                                          /* 8 */
"  </gpu>\n"                                                           /* 9 */
"  <gpu id=\"1\" i_chunks=\"2\" o_chunks=\"2\" s_chunks=\"0\">\n"      /* 10 */
"    <tb id=\"0\" send=\"0\" recv=\"0\" chan=\"0\">\n"                 /* 11 */
"      <step s=\"0\" type=\"s\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"o\" "
"dstoff=\"0\" cnt=\"1\" depid=\"-1\" deps=\"-1\" hasdep=\"0\"/>\n"     /* 12 */
"      <step s=\"1\" type=\"rrc\" srcbuf=\"i\" srcoff=\"1\" dstbuf=\"o\" "
"dstoff=\"1\" cnt=\"1\" depid=\"-1\" deps=\"-1\" hasdep=\"0\"/>\n"     /* 13 */
"      <step s=\"2\" type=\"s\" srcbuf=\"o\" srcoff=\"1\" dstbuf=\"o\" "
"dstoff=\"1\" cnt=\"1\" depid=\"-1\" deps=\"-1\" hasdep=\"0\"/>\n"     /* 14 */
"      <step s=\"3\" type=\"r\" srcbuf=\"o\" srcoff=\"0\" dstbuf=\"o\" "
"dstoff=\"0\" cnt=\"1\" depid=\"-1\" deps=\"-1\" hasdep=\"0\"/>\n"     /* 15 */
"    </tb>\n"
"  </gpu>\n"
"</algo>\n";

/* base_xml with the n-th occurrence (1-based) of `from` replaced by `to`;
 * owned by the caller. */
static char *mutate(const char *from, int nth, const char *to)
{
    const char *p = base_xml;
    for (int k = 0; p != NULL && k < nth; k++) {
        p = strstr(k == 0 ? p : p + 1, from);
    }
    if (p == NULL)
        return NULL;
    size_t pre = (size_t)(p - base_xml), fl = strlen(from), tl = strlen(to);
    char *out = malloc(sizeof(base_xml) + tl + 1);
    if (out == NULL)
        return NULL;
    memcpy(out, base_xml, pre);
    memcpy(out + pre, to, tl);
    strcpy(out + pre + tl, p + fl);
    return out;
}

static ccs_status_t import_str(const char *xml, ccs_sched_t **s,
                               ccs_err_t *err, const msccl_import_opts_t *o)
{
    return msccl_import_mem(xml, strlen(xml), "t.xml", o, s, NULL, err);
}

TEST(base_is_valid)
{
    ccs_sched_t *s = NULL;
    ccs_err_t err = { { 0 } };
    ccs_status_t st = import_str(base_xml, &s, &err, NULL);

    CHECK_MSG(st == CCS_OK, "%s", ccs_err_msg(&err, st));
    if (st != CCS_OK)
        return;
    st = verify_sched(s, NULL, &err);
    CHECK_MSG(st == CCS_OK, "%s", ccs_err_msg(&err, st));
    /* send, receive-reduce, send back, receive: 2 lock-step steps after
     * the sends line up (the second send waits for its reduce) */
    CHECK_EQ_INT(s->nranks, 2);
    CHECK_EQ_INT(s->nchunks, 2);
    CHECK_EQ_INT(s->nsteps, 2);
    ccs_sched_destroy(s);
}

/* Each broken file: the mutation, the status, the exact message. */
static const struct broken {
    const char *what, *from;
    int nth;
    const char *to;
    ccs_status_t st;
    const char *msg;
} broken[] = {
    { "malformed", "</algo>", 1, "</alg>", CCS_ERR_PARSE,
      "t.xml:18: malformed XML: Opening and ending tag mismatch: algo "
      "line 1 and alg" },
    { "missing outofplace", " outofplace=\"1\"", 1, "", CCS_ERR_PARSE,
      "t.xml:1: <algo> lacks the attribute 'outofplace' (the executor "
      "refuses the file)" },
    { "peer out of range", "send=\"1\"", 1, "send=\"5\"", CCS_ERR_PARSE,
      "t.xml:3: gpu 0 tb 0: peer send=\"5\" recv=\"1\" out of range (-1 or "
      "0..1)" },
    { "offset out of range", "srcoff=\"1\"", 1, "srcoff=\"7\"",
      CCS_ERR_PARSE,
      "t.xml:4: gpu 0 tb 0 step 0 (s): source i[7..7] is outside the "
      "buffer (i_chunks=2)" },
    { "cnt limit", "cnt=\"1\"", 1, "cnt=\"72\"", CCS_ERR_UNSUPPORTED,
      "t.xml:4: gpu 0 tb 0 step 0: cnt=\"72\" must be 1..71" },
    /* the executor stores depid in an int8_t: 128 would wait on flag -128 */
    { "depid past 8 bits", "depid=\"-1\" deps=\"-1\"", 2,
      "depid=\"128\" deps=\"0\"", CCS_ERR_UNSUPPORTED,
      "t.xml:5: gpu 0 tb 0 step 1: depid=\"128\": the executor keeps it in "
      "8 bits, so only thread blocks 0..127 can be waited for" },
    { "unknown type", "type=\"rrc\"", 1, "type=\"rrx\"", CCS_ERR_PARSE,
      "t.xml:5: gpu 0 tb 0 step 1: unknown type \"rrx\"" },
    { "step numbering", "<step s=\"2\"", 1, "<step s=\"5\"", CCS_ERR_PARSE,
      "t.xml:6: gpu 0 tb 0: step s=\"5\" is the tb's step number 2" },
    { "tb id gap", "<tb id=\"0\"", 1, "<tb id=\"1\"", CCS_ERR_PARSE,
      "t.xml:3: gpu 0: thread block id=\"1\" where 0 was expected" },
    { "unsupported collective", "coll=\"allreduce\"", 1,
      "coll=\"gather\"", CCS_ERR_UNSUPPORTED,
      "t.xml:1: coll=\"gather\": ccsynth models allreduce" },
    { "missing gpu", "ngpus=\"2\"", 1, "ngpus=\"3\"", CCS_ERR_PARSE,
      "t.xml:1: ngpus=\"3\" but gpu 2 has no <gpu> element" },
    /* a channel beyond nchannels */
    { "channel range", "chan=\"0\"", 1, "chan=\"1\"", CCS_ERR_PARSE,
      "t.xml:3: gpu 0 tb 0: chan=\"1\" outside 0..0 (nchannels=\"1\")" },
    /* gpu 1 receives 2 chunks where gpu 0 sends 1: different orders */
    { "cnt mismatch", "srcoff=\"1\" dstbuf=\"o\" dstoff=\"1\" cnt=\"1\"", 1,
      "srcoff=\"0\" dstbuf=\"o\" dstoff=\"0\" cnt=\"2\"", CCS_ERR_VERIFY,
      "t.xml:4: message 1 from gpu 0 to gpu 1 on channel 0: gpu 0 tb 0 "
      "step 0 (s) sends cnt=2 but gpu 1 tb 0 step 1 (rrc) (line 13) "
      "receives cnt=1" },
    /* gpu 0 sends one message fewer than gpu 1 receives */
    { "missing send", "type=\"s\" srcbuf=\"i\" srcoff=\"1\"", 1,
      "type=\"nop\" srcbuf=\"i\" srcoff=\"1\"", CCS_ERR_VERIFY,
      "t.xml:15: deadlock: gpu 1 tb 0 step 3 (r) waits for message 2 from "
      "gpu 0 on channel 0, but gpu 0 tb 0 sends only 1 on that "
      "connection" },
    /* wrong data: gpu 0 overwrites instead of reducing */
    { "postcondition", "type=\"rrc\" srcbuf=\"i\" srcoff=\"0\"", 1,
      "type=\"r\" srcbuf=\"i\" srcoff=\"0\"", CCS_ERR_VERIFY,
      "rank 0 out[0]" },
};

TEST(broken_files)
{
    for (size_t i = 0; i < sizeof(broken) / sizeof(broken[0]); i++) {
        const struct broken *b = &broken[i];
        char *xml = mutate(b->from, b->nth, b->to);
        ccs_sched_t *s = NULL;
        ccs_err_t err = { { 0 } };
        ccs_status_t st;

        CHECK_MSG(xml != NULL, "%s: mutation not found", b->what);
        if (xml == NULL)
            continue;
        st = import_str(xml, &s, &err, NULL);
        /* the postcondition is the verifier's */
        if (st == CCS_OK && b->st == CCS_ERR_VERIFY) {
            st = verify_sched(s, NULL, &err);
        }
        CHECK_MSG(st == b->st, "%s: status %s, want %s (%s)", b->what,
                  ccs_status_name(st), ccs_status_name(b->st),
                  ccs_err_msg(&err, st));
        if (b->msg != NULL && st != CCS_OK)
            CHECK_MSG(strstr(ccs_err_msg(&err, st), b->msg) != NULL,
                      "%s: message '%s' lacks '%s'", b->what,
                      ccs_err_msg(&err, st), b->msg);
        ccs_sched_destroy(s);
        free(xml);
    }
}

/* Errors that need more than one substitution. */
TEST(broken_structure)
{
    ccs_sched_t *s = NULL;
    ccs_err_t err = { { 0 } };
    ccs_status_t st;
    msccl_import_opts_t o;

    /* a second tb sending to gpu 1 on channel 0 */
    char *x1 = mutate("    </tb>\n  </gpu>\n", 1,
                      "    </tb>\n    <tb id=\"1\" send=\"1\" recv=\"-1\" "
                      "chan=\"0\">\n    </tb>\n  </gpu>\n");
    st = import_str(x1, &s, &err, NULL);
    CHECK_STATUS(st, CCS_ERR_PARSE);
    CHECK_STR_CONTAINS(ccs_err_msg(&err, st),
                       "t.xml:9: gpu 0 tb 1 sends to gpu 1 on channel 0, "
                       "which tb 0 already does: a connection belongs to one "
                       "thread block");
    free(x1);

    /* more thread blocks than can be resident at once */
    char *x3 = mutate("    </tb>\n  </gpu>\n", 1,
                      "    </tb>\n    <tb id=\"1\" send=\"-1\" recv=\"-1\" "
                      "chan=\"0\">\n    </tb>\n  </gpu>\n");
    msccl_import_opts_init(&o);
    o.max_tbs = 1;
    st = import_str(x3, &s, &err, &o);
    CHECK_STATUS(st, CCS_ERR_UNSUPPORTED);
    CHECK_STR_CONTAINS(ccs_err_msg(&err, st),
                       "t.xml:2: gpu 0 has 2 thread blocks, more than the 1 "
                       "that can be resident at once");
    o.max_tbs = 2;
    st = import_str(x3, &s, &err, &o);
    CHECK_MSG(st == CCS_OK, "%s", ccs_err_msg(&err, st));
    ccs_sched_destroy(s);
    s = NULL;
    free(x3);

    /* a nop waiting for a step with hasdep="0" */
    char *x2 = mutate("    </tb>\n  </gpu>\n", 1,
                      "    </tb>\n    <tb id=\"1\" send=\"-1\" recv=\"-1\" "
                      "chan=\"0\">\n      <step s=\"0\" type=\"nop\" "
                      "srcbuf=\"i\" srcoff=\"-1\" dstbuf=\"o\" dstoff=\"-1\" "
                      "cnt=\"0\" depid=\"0\" deps=\"1\" hasdep=\"0\"/>\n"
                      "    </tb>\n  </gpu>\n");
    st = import_str(x2, &s, &err, NULL);
    CHECK_STATUS(st, CCS_ERR_VERIFY);
    CHECK_STR_CONTAINS(ccs_err_msg(&err, st),
                       "t.xml:10: deadlock: gpu 0 tb 1 step 0 waits for tb 0 "
                       "step 1 (line 5), which has hasdep=\"0\"");
    free(x2);

    /* both gpus receive first: a cycle */
    const char *cyc =
"<algo proto=\"LL\" nchannels=\"1\" nchunksperloop=\"2\" ngpus=\"2\" "
"coll=\"allgather\" inplace=\"0\" outofplace=\"1\" minBytes=\"0\" "
"maxBytes=\"0\">\n"
" <gpu id=\"0\" i_chunks=\"1\" o_chunks=\"2\" s_chunks=\"0\">\n"
"  <tb id=\"0\" send=\"1\" recv=\"1\" chan=\"0\">\n"
"   <step s=\"0\" type=\"r\" srcbuf=\"o\" srcoff=\"1\" dstbuf=\"o\" "
"dstoff=\"1\" cnt=\"1\" depid=\"-1\" deps=\"-1\" hasdep=\"0\"/>\n"
"   <step s=\"1\" type=\"s\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"o\" "
"dstoff=\"0\" cnt=\"1\" depid=\"-1\" deps=\"-1\" hasdep=\"0\"/>\n"
"  </tb>\n </gpu>\n"
" <gpu id=\"1\" i_chunks=\"1\" o_chunks=\"2\" s_chunks=\"0\">\n"
"  <tb id=\"0\" send=\"0\" recv=\"0\" chan=\"0\">\n"
"   <step s=\"0\" type=\"r\" srcbuf=\"o\" srcoff=\"0\" dstbuf=\"o\" "
"dstoff=\"0\" cnt=\"1\" depid=\"-1\" deps=\"-1\" hasdep=\"0\"/>\n"
"   <step s=\"1\" type=\"s\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"o\" "
"dstoff=\"1\" cnt=\"1\" depid=\"-1\" deps=\"-1\" hasdep=\"0\"/>\n"
"  </tb>\n </gpu>\n</algo>\n";
    st = import_str(cyc, &s, &err, NULL);
    CHECK_STATUS(st, CCS_ERR_VERIFY);
    CHECK_STR_CONTAINS(ccs_err_msg(&err, st), "deadlock: dependency cycle");
    CHECK_STR_CONTAINS(ccs_err_msg(&err, st), "gpu 0 tb 0 step 0 (r)");
    CHECK_STR_CONTAINS(ccs_err_msg(&err, st), "gpu 1 tb 0 step 0 (r)");

    /* the executor's step limit, lowered */
    msccl_import_opts_init(&o);
    o.max_tb_steps = 2;
    st = import_str(base_xml, &s, &err, &o);
    CHECK_STATUS(st, CCS_ERR_UNSUPPORTED);
    CHECK_STR_CONTAINS(ccs_err_msg(&err, st),
                       "t.xml:6: gpu 0 tb 0 step 2: more than 2 steps in one "
                       "thread block");
    ccs_sched_destroy(s);
}

/* ---- the public files ---- */

static const struct pub {
    const char *file, *topo;
    ccs_coll_t coll;
    uint32_t nranks;
} pubs[] = {
    { "azure-ncv4-ag_hier_4_Simple.xml", "switch:4", CCS_COLL_ALLGATHER, 4 },
    { "azure-ndv4-a2a2ll.xml", "dgx-a100", CCS_COLL_ALLTOALL, 8 },
    { "azure-ndv4-ag-1k-512k.xml", "dgx-a100", CCS_COLL_ALLGATHER, 8 },
    { "azure-ndv4-r48ll128.xml", "dgx-a100", CCS_COLL_ALLREDUCE, 8 },
    { "rccl-all-reduce-ring-simple.xml", "switch:16", CCS_COLL_ALLREDUCE,
      16 },
    { "rccl-allreduce-allpairs-8n-ll-32tb.xml", "dgx-a100",
      CCS_COLL_ALLREDUCE, 8 },
    { "rccl-alltoall-8n-9kb-190kb.xml", "dgx-a100", CCS_COLL_ALLTOALL, 8 },
};

/* The public files live beside the project (CI: ../shared/msccl). */
static const char *pub_dir(void)
{
    static const char *const dirs[] = { "../shared/msccl",
                                        "../../shared/msccl" };
    const char *env = getenv("CCS_MSCCL_DIR");
    struct stat sb;
    if (env != NULL)
        return env;
    for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
        if (stat(dirs[i], &sb) == 0 && S_ISDIR(sb.st_mode))
            return dirs[i];
    return NULL;
}

TEST(public_files)
{
    const char *dir = pub_dir();
    int clean = 0;

    CHECK_MSG(dir != NULL, "the public MSCCL files are not at "
              "../shared/msccl (run from the repository root, or set "
              "CCS_MSCCL_DIR)");
    if (dir == NULL)
        return;
    for (size_t i = 0; i < sizeof(pubs) / sizeof(pubs[0]); i++) {
        char path[512];
        ccs_sched_t *s = NULL;
        topo_t *t = NULL;
        sim_opts_t so;
        sim_result_t r;
        ccs_err_t err = { { 0 } };
        msccl_import_info_t info;
        ccs_status_t st;

        snprintf(path, sizeof(path), "%s/%s", dir, pubs[i].file);
        st = msccl_import_file(path, NULL, &s, &info, &err);
        CHECK_MSG(st == CCS_OK, "%s", ccs_err_msg(&err, st));
        if (st != CCS_OK)
            continue;
        CHECK_EQ_INT(s->coll, pubs[i].coll);
        CHECK_EQ_INT(s->nranks, pubs[i].nranks);
        st = verify_sched(s, NULL, &err);
        CHECK_MSG(st == CCS_OK, "%s: %s", path, ccs_err_msg(&err, st));
        if (st == CCS_OK)
            clean++;
        st = topo_load(pubs[i].topo, NULL, &t, &err);
        CHECK_STATUS(st, CCS_OK);
        sim_opts_init(&so);
        so.elem_bytes = 4;
        if (st == CCS_OK) {
            st = sim_run(s, t, 1 << 20, &so, &r, &err);
            CHECK_MSG(st == CCS_OK && r.time_s > 0, "%s: sim: %s", path,
                      ccs_err_msg(&err, st));
            if (st == CCS_OK)
                sim_result_free(&r);
        }
        topo_destroy(t);
        ccs_sched_destroy(s);
    }
    printf("public MSCCL files: %d of %zu import, verify and simulate\n",
           clean, sizeof(pubs) / sizeof(pubs[0]));
}

/* ---- round trip ---- */

static double sim_time(const ccs_sched_t *s, const topo_t *t, double bytes)
{
    sim_opts_t so;
    sim_result_t r;
    ccs_err_t err = { { 0 } };
    sim_opts_init(&so);
    so.elem_bytes = 4;
    /* Both sides under the ideal model: an imported plan carries the XML's
     * proto= (Simple), the original none; the round trip is about the
     * structure, not the protocol. */
    so.proto = SIM_PROTO_IDEAL;
    if (sim_run(s, t, bytes, &so, &r, &err) != CCS_OK)
        return -1;
    double v = r.time_s;
    sim_result_free(&r);
    return v;
}

TEST(round_trip)
{
    static const char *const topos[] = { "switch:6", "dgx-h100",
                                         "torus:4x4" };
    int total = 0, within = 0, verified = 0, refused = 0;

    for (size_t ti = 0; ti < sizeof(topos) / sizeof(topos[0]); ti++) {
        topo_t *t = NULL;
        ccs_err_t err = { { 0 } };
        ccs_status_t st = topo_load(topos[ti], NULL, &t, &err);
        CHECK_STATUS(st, CCS_OK);
        if (st != CCS_OK)
            continue;
        for (int ai = 0; ai < algo_count(); ai++) {
            const algo_desc_t *a = algo_at(ai);
            for (int c = 0; c < CCS_COLL_COUNT; c++) {
                algo_params_t p;
                ccs_sched_t *s = NULL, *b = NULL;
                char *xml = NULL;
                size_t len = 0;

                if (!(a->colls & ALGO_COLL_BIT(c)))
                    continue;
                algo_params_init(&p);
                p.coll = (ccs_coll_t)c;
                if (a->check != NULL && a->check(t, &p, &err) != CCS_OK)
                    continue;
                if (algo_synthesize(a->name, t, &p, &s, &err) != CCS_OK ||
                    verify_sched(s, NULL, &err) != CCS_OK) {
                    ccs_sched_destroy(s);
                    continue;   /* not this module's business */
                }
                total++;
                st = msccl_export(s, NULL, &xml, &len, NULL, &err);
                if (st == CCS_ERR_UNSUPPORTED) {
                    /* a refusal must say which limit and the way out */
                    CHECK_STR_CONTAINS(ccs_err_msg(&err, st), "way out");
                    refused++;
                    printf("round trip %s %s %s: export refused: %s\n",
                           topos[ti], a->name, ccs_coll_str(c),
                           ccs_err_msg(&err, st));
                    ccs_sched_destroy(s);
                    continue;
                }
                CHECK_MSG(st == CCS_OK, "%s %s %s: export: %s", topos[ti],
                          a->name, ccs_coll_str(c), ccs_err_msg(&err, st));
                if (st == CCS_OK)
                    st = msccl_import_mem(xml, len, "rt.xml", NULL, &b,
                                          NULL, &err);
                CHECK_MSG(st == CCS_OK, "%s %s %s: import: %s", topos[ti],
                          a->name, ccs_coll_str(c), ccs_err_msg(&err, st));
                if (st == CCS_OK)
                    st = verify_sched(b, NULL, &err);
                CHECK_MSG(st == CCS_OK, "%s %s %s: verify: %s", topos[ti],
                          a->name, ccs_coll_str(c), ccs_err_msg(&err, st));
                if (st == CCS_OK) {
                    verified++;
                    bool ok = true;
                    for (double bytes = 65536; bytes < 1e8;
                         bytes *= 1024) {
                        double t0 = sim_time(s, t, bytes);
                        double t1 = sim_time(b, t, bytes);
                        if (!(t0 > 0 && fabs(t1 - t0) <= 0.05 * t0)) {
                            ok = false;
                            printf("round trip %s %s %s at %.0f B: %.3f us "
                                   "-> %.3f us\n", topos[ti], a->name,
                                   ccs_coll_str(c), bytes, t0 * 1e6,
                                   t1 * 1e6);
                        }
                    }
                    within += ok;
                    CHECK_MSG(ok, "%s %s %s: simulated time moved by more "
                              "than 5%%", topos[ti], a->name,
                              ccs_coll_str(c));
                }
                free(xml);
                ccs_sched_destroy(b);
                ccs_sched_destroy(s);
            }
        }
        topo_destroy(t);
    }
    printf("round trip: %d schedules, %d refused at export (limit named), "
           "%d verified after import, %d within 5%%\n", total, refused,
           verified, within);
    /* everything exported comes back verified (each checked above) */
    CHECK_EQ_INT(verified, total - refused);
}

/* ---- export limits and options ---- */

static ccs_sched_t *synth(const char *algo, ccs_coll_t coll,
                          const char *topo)
{
    topo_t *t = NULL;
    ccs_sched_t *s = NULL;
    algo_params_t p;
    ccs_err_t err = { { 0 } };

    if (topo_load(topo, NULL, &t, &err) != CCS_OK)
        return NULL;
    algo_params_init(&p);
    p.coll = coll;
    if (algo_synthesize(algo, t, &p, &s, &err) != CCS_OK)
        s = NULL;
    topo_destroy(t);
    return s;
}

TEST(export_limits)
{
    ccs_sched_t *s = synth("ring", CCS_COLL_ALLREDUCE, "switch:64");
    msccl_export_opts_t o;
    msccl_export_info_t info;
    ccs_err_t err = { { 0 } };
    char *xml = NULL;
    size_t len;
    ccs_status_t st;

    CHECK(s != NULL);
    if (s == NULL)
        return;
    /* 126 steps per connection: spread over time blocks (channels) */
    msccl_export_opts_init(&o);
    st = msccl_export(s, &o, &xml, &len, &info, &err);
    CHECK_MSG(st == CCS_OK, "%s", ccs_err_msg(&err, st));
    CHECK(info.nchannels >= 2);
    CHECK(info.max_tb_steps <= MSCCL_MAX_TB_STEPS);
    free(xml);
    /* 3 steps per thread block cannot hold it in 32 channels */
    o.max_tb_steps = 3;
    st = msccl_export(s, &o, &xml, &len, &info, &err);
    CHECK_STATUS(st, CCS_ERR_UNSUPPORTED);
    CHECK_STR_CONTAINS(ccs_err_msg(&err, st), "more than the 3 steps per "
                       "thread block the executor runs");
    CHECK_STR_CONTAINS(ccs_err_msg(&err, st), "even spread over 32 "
                       "channels");
    CHECK_STR_CONTAINS(ccs_err_msg(&err, st), "way out");
    ccs_sched_destroy(s);

    /* StragglAR reads its input after writing the output chunk: in-place
     * on request is refused, auto exports out-of-place only */
    s = synth("stragglar", CCS_COLL_ALLREDUCE, "dgx-h100");
    CHECK(s != NULL);
    if (s == NULL)
        return;
    msccl_export_opts_init(&o);
    o.inplace = 1;
    st = msccl_export(s, &o, &xml, &len, &info, &err);
    if (st == CCS_OK) {
        CHECK(info.inplace);
        free(xml);
    } else {
        CHECK_STATUS(st, CCS_ERR_UNSUPPORTED);
        CHECK_STR_CONTAINS(ccs_err_msg(&err, st), "wrong with input and "
                           "output aliased");
    }
    ccs_sched_destroy(s);

    /* a ring allreduce forwards: fused rrcs/rcs steps, one thread block
     * per rank, in place */
    s = synth("ring", CCS_COLL_ALLREDUCE, "switch:8");
    msccl_export_opts_init(&o);
    st = msccl_export(s, &o, &xml, &len, &info, &err);
    CHECK_STATUS(st, CCS_OK);
    if (st == CCS_OK) {
        CHECK(strstr(xml, "type=\"rrcs\"") != NULL ||
              strstr(xml, "type=\"rrs\"") != NULL);
        CHECK(strstr(xml, "type=\"rcs\"") != NULL);
        CHECK_EQ_INT(info.max_tbs_per_rank, 1);
        CHECK(info.inplace);
        free(xml);
    }
    ccs_sched_destroy(s);
}

static int count_xml(const char *dir);

/* The largest depid of an exported XML (-1: none). */
static int max_depid(const char *xml)
{
    int most = -1, v;
    for (const char *p = strstr(xml, "depid=\""); p != NULL;
         p = strstr(p + 1, "depid=\""))
        if (sscanf(p, "depid=\"%d\"", &v) == 1 && v > most)
            most = v;
    return most;
}

TEST(export_thread_blocks)
{
    msccl_export_opts_t o;
    msccl_export_info_t info;
    msccl_import_opts_t io;
    ccs_err_t err = { { 0 } };
    ccs_sched_t *b = NULL;
    char *xml = NULL;
    size_t len;
    ccs_status_t st;

    /* StragglAR talks to every other rank: a thread block per peer and
     * direction is 126 at 64 ranks, past the 108 resident at once; one
     * per peer (its sends and receives take turns) fits */
    ccs_sched_t *s = synth("stragglar", CCS_COLL_ALLREDUCE, "switch:64");
    CHECK(s != NULL);
    if (s == NULL)
        return;
    msccl_export_opts_init(&o);
    st = msccl_export(s, &o, &xml, &len, &info, &err);
    CHECK_MSG(st == CCS_OK, "%s", ccs_err_msg(&err, st));
    if (st == CCS_OK) {
        CHECK(info.max_tbs_per_rank <= MSCCL_RESIDENT_TBS);
        CHECK(info.max_tbs_per_rank >= 63);
        st = msccl_import_mem(xml, len, "sg.xml", NULL, &b, NULL, &err);
        CHECK_MSG(st == CCS_OK, "%s", ccs_err_msg(&err, st));
        if (st == CCS_OK)
            CHECK_STATUS(verify_sched(b, NULL, &err), CCS_OK);
        ccs_sched_destroy(b);
        b = NULL;
        free(xml);
        xml = NULL;
    }
    /* fewer than one per peer: refused, naming the limit and ways out */
    o.max_tbs = 32;
    st = msccl_export(s, &o, &xml, &len, &info, &err);
    CHECK_STATUS(st, CCS_ERR_UNSUPPORTED);
    CHECK_STR_CONTAINS(ccs_err_msg(&err, st), "more than the 32 that can be "
                       "resident at once");
    CHECK_STR_CONTAINS(ccs_err_msg(&err, st), "way out: --max-tbs");
    /* past the executor's thread-block ids: a bad request */
    o.max_tbs = MSCCL_MAX_TBS + 1;
    st = msccl_export(s, &o, &xml, &len, &info, &err);
    CHECK_STATUS(st, CCS_ERR_INVALID);
    ccs_sched_destroy(s);

    /* 139 thread blocks (a GPU with that many SMs): those waited for get
     * the ids 0..127, which the executor's 8-bit depid can name */
    s = synth("allpairs", CCS_COLL_ALLTOALL, "switch:70");
    CHECK(s != NULL);
    if (s == NULL)
        return;
    msccl_export_opts_init(&o);
    o.max_tbs = MSCCL_MAX_TBS;
    st = msccl_export(s, &o, &xml, &len, &info, &err);
    CHECK_MSG(st == CCS_OK, "%s", ccs_err_msg(&err, st));
    if (st == CCS_OK) {
        CHECK(info.max_tbs_per_rank > MSCCL_MAX_WAITED_TB + 1);
        CHECK(info.ndeps > 0);
        CHECK(max_depid(xml) <= MSCCL_MAX_WAITED_TB);
        msccl_import_opts_init(&io);
        io.max_tbs = MSCCL_MAX_TBS;
        st = msccl_import_mem(xml, len, "ap.xml", &io, &b, NULL, &err);
        CHECK_MSG(st == CCS_OK, "%s", ccs_err_msg(&err, st));
        if (st == CCS_OK)
            CHECK_STATUS(verify_sched(b, NULL, &err), CCS_OK);
        ccs_sched_destroy(b);
        b = NULL;
        /* the importer holds it to the same default */
        st = msccl_import_mem(xml, len, "ap.xml", NULL, &b, NULL, &err);
        CHECK_STATUS(st, CCS_ERR_UNSUPPORTED);
        free(xml);
        xml = NULL;
    }
    ccs_sched_destroy(s);
}

/* NVLS reduces in the switch, which MSCCL's XML cannot say: refused, and
 * left out of an algorithm directory (NCCL runs those sizes itself). */
TEST(export_nvls)
{
    ccs_sched_t *nv = synth("nvls", CCS_COLL_ALLREDUCE, "dgx-h100");
    ccs_sched_t *ring = synth("ring", CCS_COLL_ALLREDUCE, "dgx-h100");
    msccl_dir_entry_t e[2];
    ccs_err_t err = { { 0 } };
    char dir[] = "/tmp/test_msccl_nvls_XXXXXX", path[128];
    char *xml = NULL;
    size_t len;
    ccs_status_t st;

    CHECK(nv != NULL && ring != NULL);
    if (nv == NULL || ring == NULL)
        goto cleanup;
    st = msccl_export(nv, NULL, &xml, &len, NULL, &err);
    CHECK_STATUS(st, CCS_ERR_UNSUPPORTED);
    CHECK_STR_CONTAINS(ccs_err_msg(&err, st), "has no in-switch reduction");
    CHECK_STR_CONTAINS(ccs_err_msg(&err, st), "fall back to NCCL");
    memset(e, 0, sizeof(e));
    e[0].sched = ring;
    e[0].max_bytes = (1u << 20) - 1;
    e[1].sched = nv;
    e[1].min_bytes = 1u << 20;
    CHECK(mkdtemp(dir) != NULL);
    st = msccl_write_algo_dir(dir, e, 2, NULL, &err);
    CHECK_MSG(st == CCS_OK, "%s", ccs_err_msg(&err, st));
    CHECK_EQ_INT(count_xml(dir), 1);
    snprintf(path, sizeof(path), "%s/00-ring-allreduce-8.xml", dir);
    CHECK(access(path, F_OK) == 0);
    remove(path);
    rmdir(dir);

cleanup:
    ccs_sched_destroy(nv);
    ccs_sched_destroy(ring);
}

/* ---- an algorithm directory from a tune result ---- */

static int count_xml(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    if (d == NULL)
        return -1;
    while ((e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name);
        n += l > 4 && strcmp(e->d_name + l - 4, ".xml") == 0;
    }
    closedir(d);
    return n;
}

TEST(algo_dir_from_tune)
{
    static const char *const algos[] = { "ring", "allpairs", "rhd" };
    double sizes[8];
    uint32_t n = 0;
    topo_t *t = NULL;
    tune_opts_t o;
    tune_result_t *r = NULL;
    ccs_err_t err = { { 0 } };
    msccl_dir_entry_t *e = NULL;
    char dir[] = "/tmp/test_msccl_XXXXXX", sub[64], stale[128];
    ccs_status_t st;

    for (double b = 1024; b <= 256.0 * 1024 * 1024; b *= 16)
        sizes[n++] = b;
    CHECK_STATUS(topo_load("switch:8", NULL, &t, &err), CCS_OK);
    tune_opts_init(&o);
    o.coll = CCS_COLL_ALLREDUCE;
    o.algos = algos;
    o.nalgos = 3;
    o.sizes = sizes;
    o.nsizes = n;
    o.topo_spec = "switch:8";
    st = tune_run(t, &o, &r, &err);
    CHECK_MSG(st == CCS_OK, "%s", ccs_err_msg(&err, st));
    if (st != CCS_OK || mkdtemp(dir) == NULL)
        goto cleanup;
    /* The windows `tune --emit DIR --msccl` must give: one per range, from
     * the range's first size to just below the next range's (the last one
     * unbounded, the first from 0), the lookup rule of tuning.json. */
    e = calloc(r->nranges, sizeof(*e));
    for (uint32_t i = 0; e != NULL && i < r->nranges; i++) {
        e[i].sched = r->plans[r->ranges[i].config];
        e[i].min_bytes = i == 0 ? 0
            : (uint64_t)r->points[r->ranges[i].first].size_bytes;
        e[i].max_bytes = i + 1 < r->nranges
            ? (uint64_t)r->points[r->ranges[i + 1].first].size_bytes - 1
            : 0;
    }
    snprintf(sub, sizeof(sub), "%s/msccl", dir);
    /* an earlier run's file goes; the run's own files replace it */
    snprintf(stale, sizeof(stale), "%s/99-old-allreduce-8.xml", sub);
    CHECK(mkdir(sub, 0755) == 0);
    {
        FILE *f = fopen(stale, "w");
        CHECK(f != NULL);
        if (f != NULL)
            fclose(f);
    }
    st = tune_emit_msccl(r, dir, &err);
    CHECK_MSG(st == CCS_OK, "%s", ccs_err_msg(&err, st));
    CHECK_EQ_INT(count_xml(sub), (int)r->nranges);
    CHECK(access(stale, F_OK) != 0);
    /* every file imports back, verifies and has its window */
    {
        DIR *d = opendir(sub);
        struct dirent *de;
        uint32_t seen = 0;
        while (d != NULL && (de = readdir(d)) != NULL) {
            char path[512];
            ccs_sched_t *s = NULL;
            msccl_import_info_t info;
            unsigned idx;
            if (sscanf(de->d_name, "%2u-", &idx) != 1)
                continue;
            snprintf(path, sizeof(path), "%s/%s", sub, de->d_name);
            st = msccl_import_file(path, NULL, &s, &info, &err);
            CHECK_MSG(st == CCS_OK, "%s", ccs_err_msg(&err, st));
            if (st == CCS_OK && idx < r->nranges) {
                CHECK_STATUS(verify_sched(s, NULL, &err), CCS_OK);
                CHECK_EQ_INT(info.min_bytes, e[idx].min_bytes);
                CHECK_EQ_INT(info.max_bytes, e[idx].max_bytes);
                seen++;
            }
            ccs_sched_destroy(s);
            remove(path);
        }
        if (d != NULL)
            closedir(d);
        CHECK_EQ_INT(seen, r->nranges);
    }
    rmdir(sub);
    rmdir(dir);

cleanup:
    free(e);
    tune_result_destroy(r);
    topo_destroy(t);
}

/* ---- the fuzz entry point ---- */

TEST(fuzz_entry)
{
    /* every prefix of the small file, and some junk: no crash, no leak
     * (under ASAN) */
    size_t n = strlen(base_xml);
    for (size_t k = 0; k <= n; k += 7)
        CHECK_EQ_INT(msccl_fuzz_one((const uint8_t *)base_xml, k), 0);
    CHECK_EQ_INT(msccl_fuzz_one((const uint8_t *)"\0\xff<algo", 8), 0);
    CHECK_EQ_INT(msccl_fuzz_one(NULL, 0), 0);
}

int main(void)
{
    RUN(base_is_valid);
    RUN(broken_files);
    RUN(broken_structure);
    RUN(public_files);
    RUN(round_trip);
    RUN(export_limits);
    RUN(export_thread_blocks);
    RUN(export_nvls);
    RUN(algo_dir_from_tune);
    RUN(fuzz_entry);
    return TEST_SUMMARY();
}

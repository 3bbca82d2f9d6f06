/*
 * tune_write.c - the tuner's outputs: the nccl-tests style table, CSV,
 * tuning.json (docs/json.md) and the plan set directory (plans first, the
 * index last), all files through the shared writer (util/outfile.h), and
 * the MSCCL algorithm directory of the chosen plans (synth/msccl).  The
 * search that fills a tune_result_t is tune.c.
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "format.h"
#include "json.h"
#include "msccl.h"
#include "outfile.h"
#include "tune.h"

/* ---- writers ---- */

static void fmt_size(double bytes, char *buf, size_t len)
{
    static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
    int u = 0;

    while (bytes >= 1024.0 && u < 4 && fmod(bytes, 1024.0) == 0) {
        bytes /= 1024.0;
        u++;
    }
    snprintf(buf, len, "%.0f %s", bytes, unit[u]);
}

static ccs_status_t io_status(FILE *f, ccs_err_t *err)
{
    if (ferror(f))
        return ccs_err_set(err, CCS_ERR_IO, "write error");
    return CCS_OK;
}

static double algbw_GBps(double size, double t)
{
    return t > 0 ? size / t / 1e9 : 0;
}

ccs_status_t tune_write_table(const tune_result_t *r, FILE *f,
                              ccs_err_t *err)
{
    const tune_stats_t *s = &r->stats;
    char lo[32], hi[32], range[80], chunks[16], pipe[16], tm[48], bw[48],
         sp[48], nsp[48], nch[72];

    fmt_size(r->points[0].size_bytes, lo, sizeof(lo));
    fmt_size(r->points[r->npoints - 1].size_bytes, hi, sizeof(hi));
    fprintf(f, "# ccsynth tune: %s on %s (%u ranks), %u sizes %s .. %s, "
            "%u-byte elements, mode %s", ccs_coll_str(r->coll), r->topo,
            r->nranks, r->npoints, lo, hi, r->elem_bytes,
            sim_mode_str(r->mode));
    if (r->straggler >= 0)
        fprintf(f, ", rank %d arrives at %g us", r->straggler,
                r->straggler_delay_s * 1e6);
    fprintf(f, "\n");
    if (r->full_grid)
        fprintf(f, "# search: full grid, %llu simulations of %llu "
                "configurations", (unsigned long long)s->evals,
                (unsigned long long)s->grid_configs);
    else
        fprintf(f, "# search: pruned (threshold %g, coarse every %u sizes): "
                "%llu simulations (%llu + %llu + %llu by phase) + %llu for "
                "the ring column vs %llu for the full grid (%.1f%% fewer)",
                r->prune, r->coarse_stride, (unsigned long long)s->evals,
                (unsigned long long)s->evals_phase[0],
                (unsigned long long)s->evals_phase[1],
                (unsigned long long)s->evals_phase[2],
                (unsigned long long)s->ref_evals,
                (unsigned long long)s->grid_evals,
                s->grid_evals ? 100.0 * (1.0 - (double)(s->evals +
                                                        s->ref_evals) /
                                         (double)s->grid_evals) : 0.0);
    fprintf(f, "; %llu of %llu schedules built and verified; %.1f ms\n",
            (unsigned long long)s->built,
            (unsigned long long)s->grid_configs, s->wall_s * 1e3);
    fprintf(f, "# vs nccl: the nccl baseline's time (the best of NCCL's "
            "algorithms and protocols at that size) over the tuned choice's; "
            "vs ring: the single ring's\n");
    if (r->assumptions[0] != '\0')
        fprintf(f, "# %s\n", r->assumptions);
    if (s->nalgos_pruned > 0) {
        fprintf(f, "# pruned (never within the threshold):");
        for (uint32_t a = 0; a < s->nalgos_pruned; a++)
            fprintf(f, " %s", r->pruned[a]);
        fprintf(f, "\n");
    }
    fprintf(f, "%-24s %-10s %6s %3s %5s %7s %21s %21s %17s %28s %17s\n",
            "size range", "algorithm", "proto", "ch", "pipe", "chunks",
            "time (us)",
            "algbw (GB/s)", "vs nccl", "nccl choice", "vs ring");
    for (uint32_t k = 0; k < r->nranges; k++) {
        const tune_range_t *g = &r->ranges[k];
        const tune_config_t *cf = &r->configs[g->config];
        const tune_point_t *a = &r->points[g->first];
        const tune_point_t *b = &r->points[g->last];
        char chs[16];

        fmt_size(a->size_bytes, lo, sizeof(lo));
        fmt_size(b->size_bytes, hi, sizeof(hi));
        if (g->first == g->last)
            snprintf(range, sizeof(range), "%s", lo);
        else
            snprintf(range, sizeof(range), "%s .. %s", lo, hi);
        snprintf(pipe, sizeof(pipe), "%u", cf->pipeline);
        if (cf->chunks_param > 0)
            snprintf(pipe, sizeof(pipe), "-");
        snprintf(chunks, sizeof(chunks), "%u", cf->nchunks);
        /* One value for a one-size range, "first .. last" otherwise. */
        snprintf(tm, sizeof(tm), "%.2f", a->time_s * 1e6);
        snprintf(bw, sizeof(bw), "%.2f",
                 algbw_GBps(a->size_bytes, a->time_s));
        snprintf(sp, sizeof(sp), "-");
        if (a->ring_time_s > 0)
            snprintf(sp, sizeof(sp), "%.2fx", a->ring_time_s / a->time_s);
        snprintf(nsp, sizeof(nsp), "-");
        snprintf(nch, sizeof(nch), "%s", a->nccl_time_s > 0 ? a->nccl_algo
                                                           : "n/a");
        if (a->nccl_time_s > 0)
            snprintf(nsp, sizeof(nsp), "%.2fx", a->nccl_time_s / a->time_s);
        if (g->first != g->last) {
            if (a->nccl_time_s > 0 && b->nccl_time_s > 0)
                snprintf(nsp + strlen(nsp), sizeof(nsp) - strlen(nsp),
                         " .. %.2fx", b->nccl_time_s / b->time_s);
            if (strcmp(a->nccl_algo, b->nccl_algo) != 0)
                snprintf(nch + strlen(nch), sizeof(nch) - strlen(nch),
                         " .. %s", b->nccl_algo);
            snprintf(tm + strlen(tm), sizeof(tm) - strlen(tm), " .. %.2f",
                     b->time_s * 1e6);
            snprintf(bw + strlen(bw), sizeof(bw) - strlen(bw), " .. %.2f",
                     algbw_GBps(b->size_bytes, b->time_s));
            if (a->ring_time_s > 0)
                snprintf(sp + strlen(sp), sizeof(sp) - strlen(sp),
                         " .. %.2fx", b->ring_time_s / b->time_s);
        }
        snprintf(chs, sizeof(chs), "%u", cf->channels);
        fprintf(f, "%-24s %-10s %6s %3s %5s %7s %21s %21s %17s %28s %17s\n",
                range, cf->algo, sim_proto_str(cf->proto),
                cf->channels > 0 ? chs : "-", pipe, chunks, tm,
                bw, nsp, nch, sp);
    }
    return io_status(f, err);
}

ccs_status_t tune_write_csv(const tune_result_t *r, FILE *f, ccs_err_t *err)
{
    double factor = sim_busbw_factor(r->coll, r->nranks);

    fprintf(f, "size,range,algo,pipeline,chunks_param,nchunks,time_us,"
            "algbw_GBps,busbw_GBps,ring_time_us,speedup_vs_ring,file,proto,"
            "nccl_time_us,nccl_choice,speedup_vs_nccl,channels\n");
    for (uint32_t i = 0; i < r->npoints; i++) {
        const tune_point_t *p = &r->points[i];
        const tune_config_t *cf = &r->configs[p->config];
        double al = algbw_GBps(p->size_bytes, p->time_s);

        fprintf(f, "%.0f,%u,%s,%u,%u,%u,%.6f,%.6f,%.6f,", p->size_bytes,
                p->range, cf->algo, cf->pipeline, cf->chunks_param,
                cf->nchunks, p->time_s * 1e6, al, al * factor);
        if (p->ring_time_s > 0)
            fprintf(f, "%.6f,%.6f,", p->ring_time_s * 1e6,
                    p->ring_time_s / p->time_s);
        else
            fprintf(f, ",,");
        fprintf(f, "%s,%s,", cf->file, sim_proto_str(cf->proto));
        if (p->nccl_time_s > 0)
            fprintf(f, "%.6f,%s,%.6f,", p->nccl_time_s * 1e6, p->nccl_algo,
                    p->nccl_time_s / p->time_s);
        else
            fprintf(f, ",,,");
        fprintf(f, "%u\n", cf->channels);
    }
    return io_status(f, err);
}

ccs_status_t tune_write_json(const tune_result_t *r, FILE *f, ccs_err_t *err)
{
    const tune_stats_t *s = &r->stats;
    double factor = sim_busbw_factor(r->coll, r->nranks);

    fprintf(f, "{\n  \"format\": \"ccsynth-tuning\",\n  \"version\": 1,\n"
            "  \"topo\": ");
    json_str(f, r->topo);
    fprintf(f, ",\n  \"topo_fingerprint\": \"0x%016llx\",\n  \"coll\": "
            "\"%s\",\n  \"nranks\": %u,\n  \"elem_bytes\": %u,\n  \"mode\": "
            "\"%s\",\n  \"straggler\": %d,\n  \"straggler_delay_s\": %.9g,\n",
            (unsigned long long)r->topo_fingerprint, ccs_coll_str(r->coll),
            r->nranks, r->elem_bytes, sim_mode_str(r->mode), r->straggler,
            r->straggler_delay_s);
    fprintf(f, "  \"search\": {\"mode\": \"%s\", \"prune\": %.9g, "
            "\"coarse_stride\": %u, \"algos\": %u, \"algos_run\": %u, "
            "\"pruned\": [", r->full_grid ? "full-grid" : "pruned",
            r->prune, r->coarse_stride, s->nalgos, s->nalgos_run);
    for (uint32_t a = 0; a < s->nalgos_pruned; a++) {
        fprintf(f, "%s", a ? ", " : "");
        json_str(f, r->pruned[a]);
    }
    fprintf(f, "],\n             \"grid_configs\": %llu, \"grid_evals\": "
            "%llu, \"evals\": %llu, \"evals_by_phase\": [%llu, %llu, %llu], "
            "\"ring_reference_evals\": %llu, \"schedules_built\": %llu},\n",
            (unsigned long long)s->grid_configs,
            (unsigned long long)s->grid_evals, (unsigned long long)s->evals,
            (unsigned long long)s->evals_phase[0],
            (unsigned long long)s->evals_phase[1],
            (unsigned long long)s->evals_phase[2],
            (unsigned long long)s->ref_evals, (unsigned long long)s->built);
    fprintf(f, "  \"configs\": [");
    for (uint32_t g = 0; g < r->nconfigs; g++) {
        const tune_config_t *cf = &r->configs[g];
        fprintf(f, "%s\n    {\"id\": %u, \"algo\": ", g ? "," : "", g);
        json_str(f, cf->algo);
        fprintf(f, ", \"pipeline\": %u, \"chunks_param\": %u, \"nchunks\": "
                "%u, \"nsteps\": %u, \"proto\": \"%s\", \"channels\": %u, "
                "\"file\": ",
                cf->pipeline, cf->chunks_param, cf->nchunks, cf->nsteps,
                sim_proto_str(cf->proto), cf->channels);
        json_str(f, cf->file);
        fprintf(f, "}");
    }
    fprintf(f, "\n  ],\n  \"ranges\": [");
    for (uint32_t k = 0; k < r->nranges; k++) {
        const tune_range_t *g = &r->ranges[k];
        fprintf(f, "%s\n    {\"min_bytes\": %.0f, \"max_bytes\": ",
                k ? "," : "",
                k == 0 ? 0.0 : r->points[g->first].size_bytes);
        if (k + 1 < r->nranges)
            fprintf(f, "%.0f", r->points[r->ranges[k + 1].first].size_bytes
                               - 1);
        else
            fprintf(f, "null");
        fprintf(f, ", \"first_size\": %.0f, \"last_size\": %.0f, "
                "\"config\": %u, \"file\": ", r->points[g->first].size_bytes,
                r->points[g->last].size_bytes, g->config);
        json_str(f, r->configs[g->config].file);
        fprintf(f, "}");
    }
    fprintf(f, "\n  ],\n  \"sizes\": [");
    for (uint32_t i = 0; i < r->npoints; i++) {
        const tune_point_t *p = &r->points[i];
        double al = algbw_GBps(p->size_bytes, p->time_s);
        fprintf(f, "%s\n    {\"size\": %.0f, \"range\": %u, \"config\": %u, "
                "\"time_us\": %.6f, \"algbw_GBps\": %.6f, \"busbw_GBps\": "
                "%.6f, ", i ? "," : "", p->size_bytes, p->range, p->config,
                p->time_s * 1e6, al, al * factor);
        if (p->nccl_time_s > 0) {
            fprintf(f, "\"nccl_time_us\": %.6f, \"nccl_choice\": ",
                    p->nccl_time_s * 1e6);
            json_str(f, p->nccl_algo);
            fprintf(f, ", \"speedup_vs_nccl\": %.6f, ",
                    p->nccl_time_s / p->time_s);
        } else {
            fprintf(f, "\"nccl_time_us\": null, \"nccl_choice\": null, "
                    "\"speedup_vs_nccl\": null, ");
        }
        if (p->ring_time_s > 0)
            fprintf(f, "\"ring_time_us\": %.6f, \"speedup_vs_ring\": %.6f}",
                    p->ring_time_s * 1e6, p->ring_time_s / p->time_s);
        else
            fprintf(f, "\"ring_time_us\": null, \"speedup_vs_ring\": null}");
    }
    fprintf(f, "\n  ]\n}\n");
    return io_status(f, err);
}

static ccs_status_t json_writer(FILE *f, const void *ctx, ccs_err_t *err)
{
    return tune_write_json(ctx, f, err);
}

ccs_status_t tune_save_json(const tune_result_t *r, const char *path,
                            ccs_err_t *err)
{
    return outfile_write(path, json_writer, r, err);
}

ccs_status_t tune_emit(const tune_result_t *r, const char *dir,
                       ccs_err_t *err)
{
    struct stat sb;
    size_t len = strlen(dir) + 128;
    char *path = malloc(len);   /* owned here */
    ccs_status_t st = CCS_OK;

    if (path == NULL)
        return ccs_err_set(err, CCS_ERR_NOMEM, "tune: out of memory");
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        st = ccs_err_set(err, CCS_ERR_IO, "%s: cannot create directory: %s",
                         dir, strerror(errno));
        goto cleanup;
    }
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        st = ccs_err_set(err, CCS_ERR_IO, "%s: not a directory", dir);
        goto cleanup;
    }
    /* Plans first, the index last: a reader of tuning.json always finds
     * the files it names. */
    for (uint32_t g = 0; g < r->nconfigs; g++) {
        snprintf(path, len, "%s/%s", dir, r->configs[g].file);
        st = ccs_format_write_file(r->plans[g], path, err);
        if (st != CCS_OK)
            goto cleanup;
    }
    snprintf(path, len, "%s/tuning.json", dir);
    st = tune_save_json(r, path, err);

cleanup:
    free(path);
    return st;
}

/* The names msccl_write_algo_dir gives ("<NN>-<algo>-<coll>-<n>.xml"):
 * digits, a dash, anything, ".xml". */
static bool tuner_xml(const char *name)
{
    size_t n = strlen(name), i = 0;

    while (name[i] >= '0' && name[i] <= '9')
        i++;
    return i > 0 && name[i] == '-' && n > i + 4 &&
           strcmp(name + n - 4, ".xml") == 0;
}

static bool is_xml(const char *name)
{
    size_t n = strlen(name);

    return n > 4 && strcmp(name + n - 4, ".xml") == 0;
}

/* Make `dir` an empty home for this run's XMLs: MSCCL loads every XML in
 * its directory, so a previous run's file for another window would be
 * picked for sizes this run gives to another plan.  The tuner's own files
 * go; anything else that MSCCL would load is refused, checked before the
 * first removal so a refusal changes nothing. */
static ccs_status_t clear_msccl_dir(const char *dir, ccs_err_t *err)
{
    size_t len = strlen(dir) + 300;
    char *path = malloc(len);   /* owned here */
    DIR *d = NULL;
    struct dirent *de;
    ccs_status_t st = CCS_OK;

    if (path == NULL)
        return ccs_err_set(err, CCS_ERR_NOMEM, "tune: out of memory");
    for (int pass = 0; pass < 2; pass++) {
        d = opendir(dir);
        if (d == NULL) {
            if (errno != ENOENT)
                st = ccs_err_set(err, CCS_ERR_IO, "%s: cannot read "
                                 "directory: %s", dir, strerror(errno));
            goto cleanup;
        }
        while ((de = readdir(d)) != NULL) {
            if (!is_xml(de->d_name))
                continue;
            if (!tuner_xml(de->d_name)) {
                st = ccs_err_set(err, CCS_ERR_INVALID, "%s/%s is not one of "
                                 "the tuner's files, and MSCCL would load "
                                 "it beside them: move it away or --emit "
                                 "elsewhere", dir, de->d_name);
                goto cleanup;
            }
            if (pass == 0)
                continue;
            snprintf(path, len, "%s/%s", dir, de->d_name);
            if (remove(path) != 0) {
                st = ccs_err_set(err, CCS_ERR_IO, "%s: cannot remove the "
                                 "previous run's file: %s", path,
                                 strerror(errno));
                goto cleanup;
            }
        }
        closedir(d);
        d = NULL;
    }

cleanup:
    if (d != NULL)
        closedir(d);
    free(path);
    return st;
}

ccs_status_t tune_emit_msccl(const tune_result_t *r, const char *dir,
                             ccs_err_t *err)
{
    size_t len = strlen(dir) + 16;
    char *sub = malloc(len);                               /* owned here */
    msccl_dir_entry_t *e = calloc(r->nranges ? r->nranges : 1,
                                  sizeof(*e));             /* owned here */
    ccs_status_t st = CCS_OK;

    if (sub == NULL || e == NULL) {
        st = ccs_err_set(err, CCS_ERR_NOMEM, "tune: out of memory");
        goto cleanup;
    }
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        st = ccs_err_set(err, CCS_ERR_IO, "%s: cannot create directory: %s",
                         dir, strerror(errno));
        goto cleanup;
    }
    snprintf(sub, len, "%s/msccl", dir);
    st = clear_msccl_dir(sub, err);
    if (st != CCS_OK)
        goto cleanup;
    /* The windows are tune_lookup's ranges: a size picks the last range
     * whose first size it reaches, so a window ends one byte below the
     * next range's first size; sizes below the first point use the first
     * range and sizes past the last the last one. */
    for (uint32_t k = 0; k < r->nranges; k++) {
        const tune_range_t *g = &r->ranges[k];

        const tune_config_t *cf = &r->configs[g->config];

        e[k].sched = r->plans[g->config];
        /* the protocol the plan won with, where MSCCL has it */
        e[k].has_proto = cf->proto == SIM_PROTO_LL ||
                         cf->proto == SIM_PROTO_LL128 ||
                         cf->proto == SIM_PROTO_SIMPLE;
        e[k].proto = cf->proto == SIM_PROTO_LL ? MSCCL_PROTO_LL
                     : cf->proto == SIM_PROTO_LL128 ? MSCCL_PROTO_LL128
                     : MSCCL_PROTO_SIMPLE;
        e[k].channels = cf->channels;
        e[k].min_bytes = k == 0 ? 0
                         : (uint64_t)r->points[g->first].size_bytes;
        e[k].max_bytes = k + 1 < r->nranges
            ? (uint64_t)r->points[r->ranges[k + 1].first].size_bytes - 1
            : 0;
    }
    /* a plan that gets fewer channels than it was tuned for says so */
    msccl_export_opts_t base;
    msccl_export_opts_init(&base);
    base.notes = stderr;
    st = msccl_write_algo_dir(sub, e, r->nranges, &base, err);
    if (st != CCS_OK)
        ccs_err_prefix(err, "%s: ", sub);

cleanup:
    free(e);
    free(sub);
    return st;
}
